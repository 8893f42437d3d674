//! Certificates and keys must parse and look like sprig's (checked with x509-parser).

use x509_parser::prelude::*;

use super::*;

fn env() -> Rc<FuncEnv> {
    Rc::new(FuncEnv::deterministic(42, 1_700_000_000))
}

fn cert_of(v: &Value) -> Certificate {
    as_certificate(v).expect("a certificate")
}

fn parse(pem: &str) -> Vec<u8> {
    der::pem_decode(pem).expect("PEM").1
}

#[test]
fn ca_is_rsa_2048_self_signed_with_ca_extensions() {
    let e = env();
    let key = cert_key(&e).expect("key");
    let req = CertRequest {
        cn: "my-ca",
        ips: &[],
        dns: &[],
        days: 365,
        is_ca: true,
    };
    let ca = cert_of(&make_cert(&e, &req, &key, None).expect("genCA"));
    assert!(ca.cert.starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(ca.key.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    let der = parse(&ca.cert);
    let (_, x) = parse_x509_certificate(&der).expect("parses");
    assert_eq!(x.version(), X509Version::V3);
    assert_eq!(x.subject().to_string(), "CN=my-ca");
    assert_eq!(x.issuer().to_string(), "CN=my-ca");
    assert_eq!(x.validity().not_before.timestamp(), 1_700_000_000);
    assert_eq!(x.validity().not_after.timestamp(), 1_700_000_000 + 365 * 86_400);
    assert_eq!(
        x.signature_algorithm.algorithm.to_id_string(),
        "1.2.840.113549.1.1.11"
    );
    let bc = x.basic_constraints().expect("ok").expect("present");
    assert!(bc.critical && bc.value.ca);
    let ku = x.key_usage().expect("ok").expect("present").value;
    assert!(ku.digital_signature() && ku.key_encipherment() && ku.key_cert_sign());
    let eku = x.extended_key_usage().expect("ok").expect("present").value;
    assert!(eku.server_auth && eku.client_auth);
    match x.public_key().parsed() {
        Ok(x509_parser::public_key::PublicKey::RSA(rsa)) => assert_eq!(rsa.key_size(), 2048),
        other => panic!("not RSA: {other:?}"),
    }
    assert!(x.verify_signature(None).is_ok());
    assert!(x.serial.bits() <= 128);
}

#[test]
fn signed_leaf_has_sans_and_verifies_against_the_ca() {
    let e = env();
    let ca_key = cert_key(&e).expect("key");
    let ca_req = CertRequest {
        cn: "ca",
        ips: &[],
        dns: &[],
        days: 10,
        is_ca: true,
    };
    let ca = cert_of(&make_cert(&e, &ca_req, &ca_key, None).expect("genCA"));
    let ips = [Value::from("10.0.0.1"), Value::from("::1")];
    let dns = [Value::from("a.example.com"), Value::from("b")];
    let req = CertRequest {
        cn: "leaf",
        ips: &ips,
        dns: &dns,
        days: 30,
        is_ca: false,
    };
    let leaf_key = cert_key(&e).expect("key");
    let leaf = cert_of(&make_cert(&e, &req, &leaf_key, Some(&ca)).expect("genSignedCert"));
    let ca_der = parse(&ca.cert);
    let (_, ca_x) = parse_x509_certificate(&ca_der).expect("ca parses");
    let der = parse(&leaf.cert);
    let (_, x) = parse_x509_certificate(&der).expect("leaf parses");
    assert_eq!(x.issuer().to_string(), "CN=ca");
    assert_eq!(x.subject().to_string(), "CN=leaf");
    assert!(x.verify_signature(Some(ca_x.public_key())).is_ok());
    let bc = x.basic_constraints().expect("ok").expect("present");
    assert!(bc.critical && !bc.value.ca);
    let san = x.subject_alternative_name().expect("ok").expect("present").value;
    let names: Vec<String> = san.general_names.iter().map(|n| n.to_string()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names[0].contains("a.example.com") && names[1].contains('b'));
    let has_ski = x
        .extensions()
        .iter()
        .any(|ext| ext.oid == x509_parser::oid_registry::OID_X509_EXT_SUBJECT_KEY_IDENTIFIER);
    assert!(!has_ski, "Go puts no subject key id on leaves");
    let has_aki = x
        .extensions()
        .iter()
        .any(|ext| ext.oid == x509_parser::oid_registry::OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER);
    assert!(has_aki);
}

#[test]
fn argument_errors_match_sprig() {
    let e = env();
    let key = keys::generate_ed25519(&e);
    let bad_ip = [Value::from("nope")];
    let req = CertRequest {
        cn: "x",
        ips: &bad_ip,
        dns: &[],
        days: 1,
        is_ca: false,
    };
    let err = make_cert(&e, &req, &key, None).expect_err("bad ip");
    assert_eq!(err.to_string(), "error parsing ip: nope");
    let int_dns = [Value::Int(1)];
    let req = CertRequest {
        cn: "x",
        ips: &[],
        dns: &int_dns,
        days: 1,
        is_ca: false,
    };
    let err = make_cert(&e, &req, &key, None).expect_err("bad dns");
    assert_eq!(
        err.to_string(),
        "error processing alternate dns name: 1 is not a string"
    );
    assert_eq!(
        given_key("junk").err().map(|e| e.to_string()).as_deref(),
        Some("parsing private key: no PEM data in input")
    );
    assert_eq!(
        build_custom_cert("!!", "!!")
            .err()
            .map(|e| e.to_string())
            .as_deref(),
        Some("unable to decode base64 certificate")
    );
    assert_eq!(
        build_custom_cert(&STANDARD.encode("x"), &STANDARD.encode("y"))
            .err()
            .map(|e| e.to_string())
            .as_deref(),
        Some("unable to decode certificate")
    );
}

#[test]
fn ecdsa_and_ed25519_keys_sign_cas_and_round_trip() {
    let e = env();
    for pem in [
        keys::generate_ecdsa_p256().expect("ecdsa").pem,
        keys::generate_ed25519(&e).pem,
    ] {
        let key = given_key(&pem).expect("parses back");
        assert_eq!(key.pem, pem, "re-encoded like sprig");
        let req = CertRequest {
            cn: "ca",
            ips: &[],
            dns: &[],
            days: 1,
            is_ca: true,
        };
        let ca = cert_of(&make_cert(&e, &req, &key, None).expect("genCAWithKey"));
        let der = parse(&ca.cert);
        let (_, x) = parse_x509_certificate(&der).expect("parses");
        assert!(x.verify_signature(None).is_ok());
        let built = cert_of(
            &build_custom_cert(&STANDARD.encode(&ca.cert), &STANDARD.encode(&ca.key))
                .expect("buildCustomCert"),
        );
        assert_eq!(built.cert, ca.cert);
    }
}

#[test]
fn private_key_pem_headers() {
    let e = env();
    assert!(gen_private_key(&e, "ecdsa").starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
    let ed = gen_private_key(&e, "ed25519");
    assert!(
        ed.starts_with("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI"),
        "{ed}"
    );
    assert_eq!(gen_private_key(&e, "foo"), "Unknown type foo");
}

#[test]
#[ignore = "RSA-4096 and DSA parameter generation take seconds"]
fn slow_key_types() {
    let e = env();
    let rsa = gen_private_key(&e, "rsa");
    assert!(rsa.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    assert!(given_key(&rsa).is_ok());
    let dsa = gen_private_key(&e, "dsa");
    assert!(dsa.starts_with("-----BEGIN DSA PRIVATE KEY-----\n"));
}

#[test]
fn certificate_prints_like_a_go_struct() {
    let c = Certificate {
        cert: "C".into(),
        key: "K".into(),
    };
    let v = cert_value(c.cert.clone(), c.key.clone());
    assert_eq!(capstan_go::fmt::format_value(&v), "{C K}");
    assert_eq!(v.type_name(), "sprig.certificate");
}
