//! The ClusterClass chart's objects in the Cluster API version this process speaks
//! ([`crate::capi_api`], issue 47): where `v1beta2` is served, the `v1beta1` ClusterClass,
//! kubeadm and docker templates a stack renders are applied converted to `v1beta2` (so no
//! deprecated request is made, and Cluster API v1.16, which serves `v1beta2` only, accepts
//! them); where only `v1beta1` is served, a `v1beta2` object of those kinds is refused
//! naming it. Everything else is applied as rendered. The conversion itself is
//! [`capstan_stack::capi::to_v1beta2`]; this is the thin layer over the desired objects.

use capstan_apply::DesiredObject;
use capstan_stack::capi::CapiVersion;
use capstan_stack::capi::to_v1beta2::{self, ClassVersionError};

/// A conversion refused: the Applied condition's reason.
pub const CONVERSION_REFUSED: &str = "ClassConversionRefused";
/// A `v1beta2` object where only `v1beta1` is served: the Applied condition's reason.
pub const VERSION_NOT_SERVED: &str = "ClusterAPIVersionNotServed";
/// The Event of a fresh render applied converted.
pub const CONVERTED: &str = "ConvertedToV1beta2";

/// The objects to apply, and what their conversion did.
#[derive(Debug, Default)]
pub struct InVersion {
    pub objects: Vec<DesiredObject>,
    /// `Kind name` of each object converted.
    pub converted: Vec<String>,
    /// `Kind name: field dropped: why` of each field Cluster API's conversion drops.
    pub dropped: Vec<String>,
    /// Why the objects are applied as rendered in `v1beta1` although `v1beta2` is spoken: a
    /// conversion refused where `v1beta1` is still served (deprecated, Cluster API v1.11–v1.15).
    /// Refusing there would break a stack that applies today; Cluster API v1.16 will not serve
    /// `v1beta1`, so it is said in a Warning Event.
    pub kept_v1beta1: Option<String>,
}

/// `objects` as they are applied where the process speaks `speaks`, in `namespace`;
/// `v1beta1_served`: whether `v1beta1` is served too, so that a refused conversion falls back
/// to the objects as rendered.
pub fn in_version(
    objects: Vec<DesiredObject>,
    speaks: CapiVersion,
    namespace: &str,
    v1beta1_served: bool,
) -> Result<InVersion, ClassVersionError> {
    match converted(objects.clone(), speaks, namespace) {
        Err(ClassVersionError::Refused(why)) if speaks == CapiVersion::V1Beta2 && v1beta1_served => {
            Ok(InVersion {
                objects,
                kept_v1beta1: Some(why.to_string()),
                ..InVersion::default()
            })
        }
        other => other,
    }
}

fn converted(
    mut objects: Vec<DesiredObject>,
    speaks: CapiVersion,
    namespace: &str,
) -> Result<InVersion, ClassVersionError> {
    let mut out = InVersion::default();
    for object in &mut objects {
        let Some(converted) = to_v1beta2::for_cluster_api(&object.data, speaks, namespace)? else {
            continue;
        };
        let name = format!("{} {}", object.kind, object.name);
        out.dropped
            .extend(converted.dropped.iter().map(|d| format!("{name}: {d}")));
        out.converted.push(name);
        object.version = CapiVersion::V1Beta2.as_str().to_string();
        object.data = converted.object;
    }
    out.objects = objects;
    Ok(out)
}

/// The condition reason of `error`.
pub fn reason(error: &ClassVersionError) -> &'static str {
    match error {
        ClassVersionError::Refused(_) => CONVERSION_REFUSED,
        ClassVersionError::NotServed { .. } => VERSION_NOT_SERVED,
    }
}

/// The note of the Warning Event of objects kept in `v1beta1` ([`InVersion::kept_v1beta1`]).
pub fn kept_note(why: &str) -> String {
    format!(
        "applied as rendered in v1beta1 (still served, deprecated): the conversion to v1beta2 is refused: {why}; \
         Cluster API v1.16 serves v1beta2 only and will refuse these objects"
    )
}

/// The note of the [`CONVERTED`] Event.
pub fn note(in_version: &InVersion) -> String {
    let mut note = format!(
        "applied as v1beta2 (Cluster API serves it): {}",
        in_version.converted.join(", ")
    );
    if !in_version.dropped.is_empty() {
        note.push_str("; dropped as Cluster API's own conversion drops them: ");
        note.push_str(&in_version.dropped.join("; "));
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_apply::parse_stream;

    const STREAM: &str = "\
apiVersion: cluster.x-k8s.io/v1beta1
kind: ClusterClass
metadata: {name: c}
spec:
  controlPlane:
    ref: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlaneTemplate, name: cp}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: KubeadmControlPlaneTemplate
metadata: {name: cp}
spec:
  template:
    spec:
      kubeadmConfigSpec:
        clusterConfiguration:
          networking: {podSubnet: 192.168.0.0/16}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: m}
";

    #[test]
    fn converted_where_v1beta2_is_spoken_as_rendered_where_v1beta1_is() {
        let objects = parse_stream(STREAM, "test").unwrap();
        let same = in_version(objects.clone(), CapiVersion::V1Beta1, "ns", false).unwrap();
        assert_eq!(same.objects, objects);
        assert!(same.converted.is_empty());

        let out = in_version(objects, CapiVersion::V1Beta2, "ns", false).unwrap();
        let versions: Vec<(&str, &str)> = out
            .objects
            .iter()
            .map(|o| (o.kind.as_str(), o.version.as_str()))
            .collect();
        assert_eq!(
            versions,
            [
                ("ClusterClass", "v1beta2"),
                ("KubeadmControlPlaneTemplate", "v1beta2"),
                ("ConfigMap", "v1")
            ]
        );
        assert_eq!(
            out.objects[0].data["spec"]["controlPlane"]["templateRef"]["apiVersion"],
            "controlplane.cluster.x-k8s.io/v1beta2"
        );
        assert_eq!(out.dropped.len(), 1);
        assert!(note(&out).contains("KubeadmControlPlaneTemplate cp: spec.template.spec.kubeadmConfigSpec.clusterConfiguration.networking dropped"));
    }

    #[test]
    fn refusals_have_their_reasons() {
        let v1beta2 = parse_stream(
            "apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata: {name: c}\n",
            "test",
        )
        .unwrap();
        let error = in_version(v1beta2, CapiVersion::V1Beta1, "ns", false).unwrap_err();
        assert_eq!(reason(&error), VERSION_NOT_SERVED);
        let unknown = parse_stream(
            "apiVersion: cluster.x-k8s.io/v1beta1\nkind: ClusterClass\nmetadata: {name: c}\nspec: {bogus: 1}\n",
            "test",
        )
        .unwrap();
        let error = in_version(unknown.clone(), CapiVersion::V1Beta2, "ns", false).unwrap_err();
        assert_eq!(reason(&error), CONVERSION_REFUSED);
        assert!(
            error.to_string().contains("ClusterClass c: field spec.bogus"),
            "{error}"
        );
        // Where v1beta1 is still served (Cluster API v1.11–v1.15), what applies today goes on
        // applying as rendered, with the reason kept for a Warning.
        let kept = in_version(unknown.clone(), CapiVersion::V1Beta2, "ns", true).unwrap();
        assert_eq!(kept.objects, unknown);
        assert!(kept.converted.is_empty());
        assert!(
            kept.kept_v1beta1
                .as_deref()
                .is_some_and(|why| why.contains("field spec.bogus")),
            "{kept:?}"
        );
    }
}
