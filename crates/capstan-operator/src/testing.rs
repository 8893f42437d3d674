//! The internals that tests and examples drive directly, under the paths they have inside
//! the crate (`capstan_operator::testing::drift::DriftWatches` is `crate::drift::DriftWatches`).
//! Compiled only with the `testing` feature, which only the workspace's dev-dependencies turn
//! on: the `capstan` binary cannot reach any of it (docs/architecture.md, "The operator's
//! front door").

pub mod addon {
    pub mod condition {
        pub use crate::addon::condition::{ConditionError, Verdict, evaluate};
    }
}

pub mod capi_api {
    pub use crate::capi_api::{
        Choice, cluster_class_resource_of, cluster_resource_of, current, ensure_discovered, set,
    };
}

pub mod clusters {
    pub use crate::clusters::{cluster_resource, list, users_of};
}

pub mod context {
    pub use crate::context::Context;
}

pub mod controller {
    pub mod cluster_addon {
        pub use crate::controller::cluster_addon::{AddonController, FINALIZER, reconcile};
    }

    pub mod cluster_stack_release {
        pub mod watches {
            pub use crate::controller::cluster_stack_release::watches::ReleaseWatches;
        }
    }

    pub mod rollout {
        pub mod act {
            pub use crate::controller::rollout::act::switch_patch;
        }
    }
}

pub mod drift {
    pub use crate::drift::{DriftWatches, Kind, Notify, written};
}

pub mod events {
    pub use crate::events::{Event, EventType, Recorder, Reporter};
}

pub mod hooks {
    pub use crate::hooks::server::serve_with;
}

pub mod leader {
    pub use crate::leader::{Leadership, acquire};
}

pub mod management {
    pub use crate::management::Management;
    pub use crate::management::strip::LAST_APPLIED_ANNOTATION;
}

pub mod preflight {
    pub use crate::preflight::{Evidence, REQUESTED_APIS_CHECK, TARGET_RENDERS_CHECK};

    pub mod helm {
        pub use crate::preflight::helm::{RELEASE_SECRET_TYPE, stored_release_apis};
    }

    pub mod render {
        pub use crate::preflight::render::target_renders;
    }

    pub mod workload {
        pub use crate::preflight::workload::requested_apis;
    }
}

pub mod rollout {
    pub mod plan {
        pub use crate::rollout::plan::max_in_flight;
    }

    pub mod preflight {
        pub use crate::rollout::preflight::REMOVED_APIS_CHECK;
    }
}

pub mod shard {
    pub use crate::shard::SHARD_LABEL;
}

pub mod sources {
    pub use crate::sources::Sources;
}

pub mod store {
    pub use crate::store::{OWNER_LABEL, Owner, REVISION_LABEL, RenderStore};
}

pub mod watch {
    pub use crate::watch::{CLUSTER_NAME_LABEL, objects, watch_all};
}

pub mod webhook {
    pub use crate::serve::cert::GeneratedCert;
    pub use crate::webhook::server::{serve, serve_with};
    pub use crate::webhook::{Certificate, generate};

    pub mod admission {
        pub use crate::webhook::admission::Hook;
    }
}
