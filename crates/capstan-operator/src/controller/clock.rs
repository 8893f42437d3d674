//! The time of status fields (`lastTransitionTime`, the last apply). Its own module so the
//! steps that stamp status need nothing else of `controller/mod.rs`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Now, as a status field's timestamp.
pub fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}
