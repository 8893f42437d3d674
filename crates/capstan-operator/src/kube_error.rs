//! What an API server's refusal means for the request that got it. Below the controllers
//! (the render store, the provider, the hooks use it too), so it names none of them.

/// Whether a failed request may succeed when sent again: the network, a timeout, a conflict,
/// throttling and the server's own errors; not a request the server refused as invalid.
pub fn retryable_kube(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => !matches!(status.code, 400 | 405 | 413 | 415 | 422),
        _ => true,
    }
}

/// Whether `error` is the API server's "not found".
pub fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Whether `error` is a 404 for the resource itself rather than for one object of it: a kind
/// or version the API server does not serve (its CRD missing, the version no longer served).
/// The API server names the object it did not find (`details.name`); for a path it does not
/// serve it answers a bare 404 (`404 page not found`, or a Status without details).
pub fn is_resource_not_served(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 404 && status.details.as_ref().is_none_or(|d| d.name.is_empty()))
}

/// Whether `error` is the API server's "already exists" (or a write conflict).
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// Whether `error` is the API server's "invalid" (422): a request it refused as written, a
/// JSON patch whose `test` failed among them.
pub fn is_invalid(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 422)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("boom", "Reason")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn status_codes_not_texts() {
        assert!(is_not_found(&api(404)));
        assert!(!is_not_found(&api(409)));
        assert!(is_conflict(&api(409)));
        assert!(!is_conflict(&api(404)));
        assert!(is_invalid(&api(422)));
        assert!(!is_invalid(&api(409)));
        assert!(retryable_kube(&api(409)) && retryable_kube(&api(503)));
        assert!(!retryable_kube(&api(422)));
    }

    #[test]
    fn a_missing_resource_is_told_from_a_missing_object() {
        use serde_json::json;
        // As the API server writes them.
        let status = |code: u16, name: Option<&str>| {
            let details =
                name.map(|name| json!({"name": name, "group": "cluster.x-k8s.io", "kind": "clusters"}));
            let status: kube::core::Status = serde_json::from_value(json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                "message": "not found", "code": code, "details": details,
            }))
            .expect("a Status");
            kube::Error::Api(status.boxed())
        };
        // (error, the resource is not served, not found at all)
        let cases = [
            // `clusters.cluster.x-k8s.io "web" not found`: the object.
            (status(404, Some("web")), false, true),
            // `404 page not found`: the path, so the resource.
            (status(404, None), true, true),
            (status(404, Some("")), true, true),
            (status(403, None), false, false),
            (status(410, None), false, false),
        ];
        for (error, not_served, not_found) in cases {
            assert_eq!(is_resource_not_served(&error), not_served, "{error:?}");
            assert_eq!(is_not_found(&error), not_found, "{error:?}");
        }
    }
}
