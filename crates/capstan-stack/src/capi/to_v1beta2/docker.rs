//! The docker provider's templates `v1beta1` → `v1beta2`: a DockerClusterTemplate's
//! `failureDomains` mapping (`{name: {controlPlane, attributes}}`) becomes a list of
//! `{name, controlPlane, attributes}` (by name); DockerMachineTemplate and
//! DockerMachinePoolTemplate change only their apiVersion.

use serde_json::Value;

use super::edit::{Ctx, Object};
use super::refusal::{ConversionError, Refusal};
use crate::capi::model::describe;

pub fn cluster_template(ctx: &mut Ctx, spec: &mut Object) -> Result<(), ConversionError> {
    let Some(template) = ctx.object_field(spec, "template", "spec")? else {
        return Ok(());
    };
    let Some(inner) = ctx.object_field(template, "spec", "spec.template")? else {
        return Ok(());
    };
    let path = "spec.template.spec";
    let Some(domains) = ctx.take_object(inner, "failureDomains", path)? else {
        return Ok(());
    };
    let mut domains: Vec<(String, Value)> = domains.into_iter().collect();
    domains.sort_by(|a, b| a.0.cmp(&b.0));
    let mut list = Vec::with_capacity(domains.len());
    for (name, domain) in domains {
        let domain_path = format!("{path}.failureDomains.{name}");
        let mut out = Object::new();
        out.insert("name".into(), Value::String(name));
        match domain {
            Value::Object(fields) => out.extend(fields),
            Value::Null => {}
            other => {
                return Err(ctx.error(
                    &domain_path,
                    Refusal::Invalid(format!("expected a mapping, found {}", describe(&other))),
                ));
            }
        }
        list.push(Value::Object(out));
    }
    inner.insert("failureDomains".into(), Value::Array(list));
    Ok(())
}
