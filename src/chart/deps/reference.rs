//! The forms a dependency's `repository:` takes, as Helm reads them.

/// Where a dependency comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepositoryRef {
    /// No repository: the chart must be vendored in `charts/`.
    None,
    /// `file://PATH`: a chart directory relative to the parent chart's directory.
    File(String),
    /// `http://` / `https://`: a Helm repository (its `index.yaml`).
    Http(String),
    /// `oci://HOST/PATH`: charts as OCI artifacts (`<PATH>/<name>:<version>`).
    Oci(String),
    /// `@name` or `alias:name`: a repository known by name (Helm's repositories.yaml; for
    /// capstan, a `--repository-mirror @name=URL` or `alias:name=URL`).
    Named(String),
}

/// Reads a `repository:` value. Unknown schemes are refused with the dependency's name.
pub fn parse_repository(repository: &str) -> Result<RepositoryRef, String> {
    let r = repository.trim();
    if r.is_empty() {
        return Ok(RepositoryRef::None);
    }
    if let Some(name) = r.strip_prefix('@') {
        return Ok(RepositoryRef::Named(name.to_string()));
    }
    if let Some(name) = r.strip_prefix("alias:") {
        return Ok(RepositoryRef::Named(name.to_string()));
    }
    if let Some(path) = r.strip_prefix("file://") {
        return Ok(RepositoryRef::File(path.to_string()));
    }
    if r.starts_with("oci://") {
        return Ok(RepositoryRef::Oci(r.to_string()));
    }
    if r.starts_with("https://") || r.starts_with("http://") {
        return Ok(RepositoryRef::Http(r.to_string()));
    }
    Err(format!(
        "repository {r:?} is not a URL (http://, https://, oci://, file://) or a repository name (@name, alias:name)"
    ))
}

/// Applies the first mirror whose `from` is `repository` itself or a path prefix of it
/// (compared without trailing slashes); `None` when no mirror applies.
pub fn apply_mirror(repository: &str, mirrors: &[(String, String)]) -> Option<String> {
    let repo = repository.trim_end_matches('/');
    mirrors.iter().find_map(|(from, to)| {
        let from = from.trim_end_matches('/');
        let to = to.trim_end_matches('/');
        if repo == from {
            Some(to.to_string())
        } else {
            repo.strip_prefix(from)
                .filter(|rest| rest.starts_with('/'))
                .map(|rest| format!("{to}{rest}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let cases = [
            ("", RepositoryRef::None),
            ("@stable", RepositoryRef::Named("stable".into())),
            ("alias:stable", RepositoryRef::Named("stable".into())),
            ("file://../common", RepositoryRef::File("../common".into())),
            (
                "https://helm.cilium.io/",
                RepositoryRef::Http("https://helm.cilium.io/".into()),
            ),
            (
                "http://127.0.0.1:8080/x",
                RepositoryRef::Http("http://127.0.0.1:8080/x".into()),
            ),
            (
                "oci://registry.example/charts",
                RepositoryRef::Oci("oci://registry.example/charts".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_repository(text).unwrap(), want, "{text}");
        }
        assert!(parse_repository("ftp://x").unwrap_err().contains("\"ftp://x\""));
    }

    #[test]
    fn mirrors() {
        let m = vec![
            (
                "https://helm.cilium.io".to_string(),
                "http://127.0.0.1:1/cilium/".to_string(),
            ),
            (
                "https://kubernetes.github.io/".to_string(),
                "http://127.0.0.1:1/k".to_string(),
            ),
        ];
        let cases = [
            ("https://helm.cilium.io/", Some("http://127.0.0.1:1/cilium")),
            ("https://helm.cilium.io", Some("http://127.0.0.1:1/cilium")),
            ("https://helm.cilium.iox", None),
            (
                "https://kubernetes.github.io/cloud-provider-openstack",
                Some("http://127.0.0.1:1/k/cloud-provider-openstack"),
            ),
            ("https://example.test/", None),
        ];
        let named = vec![("@stable".to_string(), "https://charts.example/stable".to_string())];
        assert_eq!(
            apply_mirror("@stable", &named).as_deref(),
            Some("https://charts.example/stable")
        );
        for (repo, want) in cases {
            assert_eq!(apply_mirror(repo, &m).as_deref(), want, "{repo}");
        }
    }
}
