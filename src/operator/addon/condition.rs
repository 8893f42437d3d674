//! STUB until the CEL module lands: wait conditions of multi-stage addons.

use crate::stack::addon_config::WaitCondition;

/// Whether a wait condition holds on a workload cluster.
pub enum Verdict {
    Met,
    NotMet(String),
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConditionError(pub String);

pub async fn evaluate(client: &kube::Client, condition: &WaitCondition) -> Result<Verdict, ConditionError> {
    let _ = (client, condition);
    Err(ConditionError("CEL conditions are not supported yet".into()))
}
