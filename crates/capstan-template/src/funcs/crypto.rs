//! Sprig v3.3.0 functions: crypto (hashes, passwords, AES, keys and certificates).

mod aes;
mod certs;
mod der;
mod digest;
mod keys;

use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::error::FuncError;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_bytes, arg_int, arg_str};
use capstan_go::value::{GoType, Object, Value};
use certs::{CertRequest, Signer};
use keys::PrivateKey;

/// Sprig's `certificate` struct: PEM text of a certificate and of its private key.
#[derive(Debug, Clone)]
pub struct Certificate {
    pub cert: String,
    pub key: String,
}

impl Object for Certificate {
    fn type_name(&self) -> String {
        "sprig.certificate".into()
    }
    fn kind(&self) -> &'static str {
        "struct"
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Cert" => Some(Value::from(self.cert.as_str())),
            "Key" => Some(Value::from(self.key.as_str())),
            _ => None,
        }
    }
    fn format(&self) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }
    fn fmt_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("Cert", Value::from(self.cert.as_str())),
            ("Key", Value::from(self.key.as_str())),
        ])
    }
    fn to_data(&self) -> Value {
        let mut m = BTreeMap::new();
        m.insert("Cert".to_string(), Value::from(self.cert.as_str()));
        m.insert("Key".to_string(), Value::from(self.key.as_str()));
        Value::map(m)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn cert_value(cert: String, key: String) -> Value {
    Value::Object(Rc::new(Certificate { cert, key }))
}

/// A `[]interface {}` argument (nil is an empty list).
fn list_items(v: &Value) -> Vec<Value> {
    v.as_list().map(|l| l.items.to_vec()).unwrap_or_default()
}

fn as_certificate(v: &Value) -> Result<Certificate, FuncError> {
    if let Value::Object(o) = v
        && let Some(c) = o.as_any().downcast_ref::<Certificate>()
    {
        return Ok(c.clone());
    }
    Err(FuncError::msg(format!(
        "wrong type for value; expected sprig.certificate; got {}",
        v.type_name()
    )))
}

/// The RSA-2048 key sprig makes for certificates when none is given.
fn cert_key(env: &FuncEnv) -> Result<PrivateKey, FuncError> {
    keys::generate_rsa(env, 2048).map_err(|e| FuncError::msg(format!("error generating rsa key: {e}")))
}

fn given_key(pem: &str) -> Result<PrivateKey, FuncError> {
    keys::parse_private_key_pem(pem).map_err(|e| FuncError::msg(format!("parsing private key: {e}")))
}

/// A certificate (self-signed, or signed by `ca`) with `key`, as a template value.
fn make_cert(
    env: &FuncEnv,
    req: &CertRequest<'_>,
    key: &PrivateKey,
    ca: Option<&Certificate>,
) -> Result<Value, FuncError> {
    let signer_key = match ca {
        Some(ca) => {
            let Some(_) = der::pem_decode(&ca.cert) else {
                return Err(FuncError::msg("unable to decode certificate"));
            };
            certs::check_certificate_pem(&ca.cert)
                .map_err(|e| FuncError::msg(e.replace("decodedCert.Bytes", "decodedSignerCert.Bytes")))?;
            Some(
                keys::parse_private_key_pem(&ca.key)
                    .map_err(|e| FuncError::msg(format!("error parsing private key: {e}")))?,
            )
        }
        None => None,
    };
    let signer = match (ca, &signer_key) {
        (Some(ca), Some(k)) => Some(Signer {
            cert_pem: &ca.cert,
            key: k,
        }),
        _ => None,
    };
    let cert = certs::create(env, req, key, signer).map_err(FuncError::msg)?;
    Ok(cert_value(cert, key.pem.clone()))
}

fn gen_private_key(env: &FuncEnv, kind: &str) -> String {
    let key = match kind {
        "" | "rsa" => keys::generate_rsa(env, 4096),
        "ecdsa" => keys::generate_ecdsa_p256(),
        "ed25519" => Ok(keys::generate_ed25519(env)),
        "dsa" => keys::generate_dsa(env),
        other => return format!("Unknown type {other}"),
    };
    match key {
        Ok(k) => k.pem,
        Err(e) => format!("failed to generate private key: {e}"),
    }
}

fn build_custom_cert(b64cert: &str, b64key: &str) -> Result<Value, FuncError> {
    let cert = STANDARD
        .decode(b64cert.as_bytes())
        .map_err(|_| FuncError::msg("unable to decode base64 certificate"))?;
    let key = STANDARD
        .decode(b64key.as_bytes())
        .map_err(|_| FuncError::msg("unable to decode base64 private key"))?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    certs::check_certificate_pem(&cert).map_err(FuncError::msg)?;
    keys::parse_private_key_pem(&key)
        .map_err(|e| FuncError::msg(format!("error parsing private key: {e}")))?;
    Ok(cert_value(cert, key))
}

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    use GoType::{Any, Int, ListAny, String as Str, Uint32};
    // Digests hash the bytes of the Go string, byte strings included.
    let text = |f: fn(&[u8]) -> String| {
        Func::pure(&[Str], move |a| Ok(Value::from(f(arg_bytes(&a[0]))))).keeping_bytes()
    };
    map.insert("sha1sum", text(digest::sha1sum));
    map.insert("sha256sum", text(digest::sha256sum));
    map.insert("sha512sum", text(digest::sha512sum));
    map.insert("adler32sum", text(digest::adler32sum));

    let e = env.clone();
    map.insert(
        "bcrypt",
        Func::pure(&[Str], move |a| {
            Ok(Value::from(digest::bcrypt(&e, arg_str(&a[0]))))
        }),
    );
    let e = env.clone();
    map.insert(
        "htpasswd",
        Func::pure(&[Str, Str], move |a| {
            Ok(Value::from(digest::htpasswd(&e, arg_str(&a[0]), arg_str(&a[1]))))
        }),
    );
    map.insert(
        "derivePassword",
        Func::pure(&[Uint32, Str, Str, Str, Str], |a| {
            let counter = u32::try_from(arg_int(&a[0])).unwrap_or_default();
            Ok(Value::from(digest::derive_password(
                counter,
                arg_str(&a[1]),
                arg_str(&a[2]),
                arg_str(&a[3]),
                arg_str(&a[4]),
            )))
        }),
    );

    let e = env.clone();
    map.insert(
        "encryptAES",
        Func::pure(&[Str, Str], move |a| {
            Ok(Value::from(aes::encrypt(&e, arg_str(&a[0]), arg_str(&a[1]))))
        }),
    );
    map.insert(
        "decryptAES",
        Func::pure(&[Str, Str], |a| {
            aes::decrypt(arg_str(&a[0]), arg_str(&a[1]))
                .map(Value::from)
                .map_err(FuncError::msg)
        }),
    );

    let e = env.clone();
    map.insert(
        "genPrivateKey",
        Func::pure(&[Str], move |a| {
            Ok(Value::from(gen_private_key(&e, arg_str(&a[0]))))
        }),
    );

    let e = env.clone();
    map.insert(
        "genCA",
        Func::pure(&[Str, Int], move |a| {
            make_cert(&e, &ca_req(a), &cert_key(&e)?, None)
        }),
    );
    let e = env.clone();
    map.insert(
        "genCAWithKey",
        Func::pure(&[Str, Int, Str], move |a| {
            make_cert(&e, &ca_req(a), &given_key(arg_str(&a[2]))?, None)
        }),
    );

    let e = env.clone();
    map.insert(
        "genSelfSignedCert",
        Func::pure(&[Str, ListAny, ListAny, Int], move |a| {
            let (ips, dns) = (list_items(&a[1]), list_items(&a[2]));
            let req = leaf_req(a, &ips, &dns);
            make_cert(&e, &req, &cert_key(&e)?, None)
        }),
    );
    let e = env.clone();
    map.insert(
        "genSelfSignedCertWithKey",
        Func::pure(&[Str, ListAny, ListAny, Int, Str], move |a| {
            let (ips, dns) = (list_items(&a[1]), list_items(&a[2]));
            let req = leaf_req(a, &ips, &dns);
            make_cert(&e, &req, &given_key(arg_str(&a[4]))?, None)
        }),
    );
    let e = env.clone();
    map.insert(
        "genSignedCert",
        Func::pure(&[Str, ListAny, ListAny, Int, Any], move |a| {
            let ca = as_certificate(&a[4])?;
            let (ips, dns) = (list_items(&a[1]), list_items(&a[2]));
            let req = leaf_req(a, &ips, &dns);
            make_cert(&e, &req, &cert_key(&e)?, Some(&ca))
        }),
    );
    let e = env.clone();
    map.insert(
        "genSignedCertWithKey",
        Func::pure(&[Str, ListAny, ListAny, Int, Any, Str], move |a| {
            let ca = as_certificate(&a[4])?;
            let (ips, dns) = (list_items(&a[1]), list_items(&a[2]));
            let req = leaf_req(a, &ips, &dns);
            make_cert(&e, &req, &given_key(arg_str(&a[5]))?, Some(&ca))
        }),
    );
    map.insert(
        "buildCustomCert",
        Func::pure(&[Str, Str], |a| build_custom_cert(arg_str(&a[0]), arg_str(&a[1]))),
    );
}

fn ca_req(a: &[Value]) -> CertRequest<'_> {
    CertRequest {
        cn: arg_str(&a[0]),
        ips: &[],
        dns: &[],
        days: arg_int(&a[1]),
        is_ca: true,
    }
}

fn leaf_req<'a>(a: &'a [Value], ips: &'a [Value], dns: &'a [Value]) -> CertRequest<'a> {
    CertRequest {
        cn: arg_str(&a[0]),
        ips,
        dns,
        days: arg_int(&a[3]),
        is_ca: false,
    }
}

#[cfg(test)]
mod tests;
