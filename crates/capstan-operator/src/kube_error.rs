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
}
