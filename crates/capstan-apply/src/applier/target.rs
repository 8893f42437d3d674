//! What one apply needs of its [`crate::Applier`]: the cluster's client and discovery cache,
//! and the progress callback.

use kube::Client;

use super::options::Progress;
use crate::discovery::Discovery;
use crate::status::ObjectResult;

/// The cluster an apply runs against.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub client: &'a Client,
    pub discovery: &'a Discovery,
    pub progress: Option<&'a Progress>,
}

impl Target<'_> {
    /// Tells the progress callback of `result`.
    pub fn report(&self, result: &ObjectResult) {
        if let Some(progress) = self.progress {
            progress(result);
        }
    }
}
