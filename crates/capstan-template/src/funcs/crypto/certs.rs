//! X.509 certificates as sprig's `genCA`, `genSelfSignedCert`, `genSignedCert` (and their
//! `…WithKey` forms) make them: RSA-2048 keys unless given, a random 128-bit serial,
//! subject CN only, valid from now for `days`, key usage digital signature + key
//! encipherment (+ cert sign for a CA), extended key usage server + client auth, basic
//! constraints always present, and signed with SHA-256 (RSA/ECDSA) or Ed25519.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyUsagePurpose, SanType, SerialNumber,
};

use super::der;
use super::keys::PrivateKey;
use crate::funcs::FuncEnv;
use capstan_go::value::Value;

/// What a certificate asks for besides its key.
pub struct CertRequest<'a> {
    pub cn: &'a str,
    pub ips: &'a [Value],
    pub dns: &'a [Value],
    pub days: i64,
    pub is_ca: bool,
}

/// A CA that signs: its certificate PEM and key.
pub struct Signer<'a> {
    pub cert_pem: &'a str,
    pub key: &'a PrivateKey,
}

/// Sprig's `getNetIPs`: every entry must be a string holding an IP address.
fn ip_addresses(ips: &[Value]) -> Result<Vec<IpAddr>, String> {
    ips.iter()
        .map(|ip| match ip.go_str_lossy() {
            Some(s) => s.parse::<IpAddr>().map_err(|_| format!("error parsing ip: {s}")),
            None => Err(format!(
                "error parsing ip: {} is not a string",
                capstan_go::fmt::format_value(ip)
            )),
        })
        .collect()
}

/// Sprig's `getAlternateDNSStrs`: every entry must be a string.
fn dns_names(dns: &[Value]) -> Result<Vec<String>, String> {
    dns.iter()
        .map(|d| match d.go_str_lossy() {
            Some(s) => Ok(s.into_owned()),
            None => Err(format!(
                "error processing alternate dns name: {} is not a string",
                capstan_go::fmt::format_value(d)
            )),
        })
        .collect()
}

/// Go encodes a name attribute as PrintableString when every character allows it.
fn name_value(s: &str) -> DnValue {
    match rcgen::string::PrintableString::try_from(s) {
        Ok(p) => DnValue::PrintableString(p),
        Err(_) => DnValue::Utf8String(s.to_string()),
    }
}

fn now(env: &FuncEnv) -> i64 {
    env.fixed_unix_seconds().unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    })
}

/// The certificate's template, validated the way sprig validates its arguments.
fn params(env: &FuncEnv, req: &CertRequest<'_>) -> Result<CertificateParams, String> {
    let ips = ip_addresses(req.ips)?;
    let dns = dns_names(req.dns)?;
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, name_value(req.cn));
    params.distinguished_name = name;
    let mut serial = [0u8; 16];
    env.fill_random(&mut serial);
    params.serial_number = Some(SerialNumber::from_slice(&serial));
    let start = now(env);
    let end = start.saturating_add(req.days.saturating_mul(86_400));
    params.not_before = time::OffsetDateTime::from_unix_timestamp(start).map_err(|e| e.to_string())?;
    params.not_after = time::OffsetDateTime::from_unix_timestamp(end)
        .map_err(|_| "x509: invalid validity period".to_string())?;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    if req.is_ca {
        params.key_usages.push(KeyUsagePurpose::KeyCertSign);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    } else {
        // Go writes `CA:FALSE` basic constraints and, unlike rcgen's explicit no-CA mode,
        // no subject key identifier on leaf certificates.
        let mut bc = CustomExtension::from_oid_content(&[2, 5, 29, 19], der::seq(&[]));
        bc.set_criticality(true);
        params.custom_extensions.push(bc);
    }
    params.subject_alt_names = dns
        .into_iter()
        .map(|d| rcgen::string::Ia5String::try_from(d).map(SanType::DnsName))
        .chain(ips.into_iter().map(|ip| Ok(SanType::IpAddress(ip))))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("x509: {e}"))?;
    Ok(params)
}

/// Makes and signs a certificate; self-signed without a signer. Returns its PEM.
pub fn create(
    env: &FuncEnv,
    req: &CertRequest<'_>,
    key: &PrivateKey,
    signer: Option<Signer<'_>>,
) -> Result<String, String> {
    let mut params = params(env, req)?;
    let key_pair = key.key_pair()?;
    let cert = match signer {
        None => params.self_signed(&key_pair),
        Some(signer) => {
            params.use_authority_key_identifier_extension = true;
            let ca_key = signer.key.key_pair()?;
            let issuer = Issuer::from_ca_cert_pem(signer.cert_pem, ca_key)
                .map_err(|e| format!("error parsing certificate: {e}"))?;
            params.signed_by(&key_pair, &issuer)
        }
    }
    .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(der::pem_encode("CERTIFICATE", cert.der()))
}

/// Checks that `pem` holds a parsable certificate (sprig's `buildCustomCert`).
pub fn check_certificate_pem(pem: &str) -> Result<(), String> {
    let Some((_, bytes)) = der::pem_decode(pem) else {
        return Err("unable to decode certificate".into());
    };
    x509_parser::parse_x509_certificate(&bytes)
        .map(|_| ())
        .map_err(|e| format!("error parsing certificate: decodedCert.Bytes: {e}"))
}
