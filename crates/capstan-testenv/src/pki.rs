//! TLS material for one test cluster: a private CA, a serving certificate for 127.0.0.1 and
//! localhost signed by it, and a service-account signing key. (rustls refuses the self-signed
//! certificate kube-apiserver would generate itself, because it acts as its own CA.)

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

pub struct Pki {
    pub ca_cert_pem: String,
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    pub sa_private_key_pem: String,
    pub sa_public_key_pem: String,
}

impl Pki {
    pub fn generate() -> Result<Self, rcgen::Error> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "capstan-test-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, &ca_key);

        let serving_key = KeyPair::generate()?;
        let mut serving = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])?;
        serving
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let serving_cert = serving.signed_by(&serving_key, &issuer)?;

        let sa_key = KeyPair::generate()?;
        Ok(Self {
            ca_cert_pem: ca_cert.pem(),
            serving_cert_pem: serving_cert.pem(),
            serving_key_pem: serving_key.serialize_pem(),
            sa_private_key_pem: sa_key.serialize_pem(),
            sa_public_key_pem: sa_key.public_key_pem(),
        })
    }
}
