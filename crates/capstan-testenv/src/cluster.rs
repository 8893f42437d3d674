//! One isolated Kubernetes control plane (etcd + kube-apiserver) for a test.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use super::pki::Pki;
use super::process::ChildGuard;
use super::{Binaries, Error, Result, io_err, shared_server};

/// How long a start may take. Generous: the test machine's cores are shared.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Port races (another process grabbing a port we picked) are retried this often.
const START_ATTEMPTS: usize = 3;

/// A running etcd + kube-apiserver, torn down (processes killed, files removed) on drop — or a
/// namespace of its own on the run's shared server ([`TestCluster::shared_or_start`]).
///
/// The processes also die if the thread that started them exits, so keep the cluster on the
/// test's own thread (as `#[tokio::test]` does) rather than handing it to another thread.
pub struct TestCluster {
    name: String,
    server: String,
    kubeconfig: PathBuf,
    client: Client,
    /// The kubeconfig context's namespace: `default` on a server of the test's own, a fresh
    /// one on the shared server.
    namespace: String,
    /// `None` on the shared server: its processes belong to `testenv-up`.
    // Drop order matters: the processes stop before their files go.
    processes: Option<Processes>,
    dir: tempfile::TempDir,
}

/// The processes of a server the test started itself.
struct Processes {
    apiserver_bin: PathBuf,
    api_args: Vec<String>,
    restarts: usize,
    // Drop order matters: the API server stops before etcd.
    apiserver: ChildGuard,
    etcd: ChildGuard,
}

impl TestCluster {
    /// Starts a fresh cluster called `name` (used as the kubeconfig cluster/context name).
    pub async fn start(bins: &Binaries, name: &str) -> Result<Self> {
        Self::start_with_args(bins, name, &[]).await
    }

    /// A fresh namespace on the run's shared API server when there is one
    /// ([`super::SHARED_KUBECONFIG_VAR`], set by `scripts/test.sh`), else
    /// [`TestCluster::start`]. For tests that neither kill nor restart the server nor need it to
    /// themselves (cluster-scoped objects they assert on, webhook configurations, RBAC
    /// experiments): they keep to [`TestCluster::namespace`], and an operator they run
    /// watches only it (`-n`). docs/testing.md lists who owns a server and why.
    pub async fn shared_or_start(bins: &Binaries, name: &str) -> Result<Self> {
        match shared_server::shared_kubeconfig() {
            Some(admin) => Self::in_shared_server(&admin, name).await,
            None => Self::start(bins, name).await,
        }
    }

    /// A fresh namespace for `name` on the shared server whose admin kubeconfig is `admin`.
    async fn in_shared_server(admin: &Path, name: &str) -> Result<Self> {
        let unreachable = |e: Error| {
            Error::Startup(format!(
                "the shared API server of {} ({}): {e}",
                admin.display(),
                shared_server::SHARED_KUBECONFIG_VAR
            ))
        };
        let dir = tempfile::Builder::new()
            .prefix(&format!("capstan-shared-{name}-"))
            .tempdir()
            .map_err(io_err("creating the test's temp dir"))?;
        let namespace = shared_server::namespace_name(name, &shared_server::unique_suffix());
        let kubeconfig = dir.path().join("kubeconfig");
        let server = shared_server::namespaced_kubeconfig(admin, &namespace, &kubeconfig)?;
        let client = client_from(&kubeconfig).await.map_err(unreachable)?;
        wait_ready(&client, None).await.map_err(unreachable)?;
        let object: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": namespace, "labels": {"capstan.dev/test": "true"}}
        }))
        .map_err(|e| Error::Startup(format!("namespace {namespace}: {e}")))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| {
                Error::Startup(format!(
                    "creating namespace {namespace} on the shared API server: {e}"
                ))
            })?;
        // Counted in docs/testing.md ("Shared API servers"), like the line of a start.
        eprintln!("capstan-testenv: namespace {namespace} on the shared API server for {name}");
        Ok(Self {
            name: name.to_string(),
            server,
            kubeconfig,
            client,
            namespace,
            processes: None,
            dir,
        })
    }

    /// [`TestCluster::start`] with more kube-apiserver flags (e.g. an audit log).
    pub async fn start_with_args(bins: &Binaries, name: &str, extra_args: &[String]) -> Result<Self> {
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match Self::start_once(bins, name, extra_args).await {
                Ok(c) => return Ok(c),
                // A server that exited early most likely lost a port race: try fresh ports.
                // A timeout would only repeat itself, slowly.
                Err(e @ Error::Startup(_)) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Startup("no start attempt".into())))
    }

    async fn start_once(bins: &Binaries, name: &str, extra_args: &[String]) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("capstan-kube-{name}-"))
            .tempdir()
            .map_err(io_err("creating the cluster's temp dir"))?;
        let root = dir.path();
        let [etcd_client, etcd_peer, api_port] = free_ports()?;

        let pki = Pki::generate()?;
        let token = admin_token();
        let files = [
            ("ca.crt", pki.ca_cert_pem.as_str()),
            ("serving.crt", pki.serving_cert_pem.as_str()),
            ("serving.key", pki.serving_key_pem.as_str()),
            ("sa.key", pki.sa_private_key_pem.as_str()),
            ("sa.pub", pki.sa_public_key_pem.as_str()),
        ];
        for (file, text) in files {
            write(&root.join(file), text)?;
        }
        write(
            &root.join("tokens.csv"),
            &format!("{token},capstan-admin,capstan-admin,\"system:masters\"\n"),
        )?;

        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let etcd_args = vec![
            "--name=default".to_string(),
            format!("--data-dir={}", root.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=default={peer_url}"),
            "--log-level=warn".to_string(),
        ];
        let etcd = ChildGuard::spawn("etcd", &bins.etcd, &etcd_args, &root.join("etcd.log"))?;

        let p = |f: &str| root.join(f).display().to_string();
        let mut api_args = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--secure-port={api_port}"),
            "--bind-address=127.0.0.1".to_string(),
            // v1.20 still opens an insecure port 8080 by default; two clusters would clash.
            "--insecure-port=0".to_string(),
            format!("--cert-dir={}", p("certs")),
            format!("--tls-cert-file={}", p("serving.crt")),
            format!("--tls-private-key-file={}", p("serving.key")),
            format!("--token-auth-file={}", p("tokens.csv")),
            "--authorization-mode=RBAC".to_string(),
            "--service-account-issuer=https://kubernetes.default.svc".to_string(),
            format!("--service-account-key-file={}", p("sa.pub")),
            format!("--service-account-signing-key-file={}", p("sa.key")),
            "--service-cluster-ip-range=10.0.0.0/24".to_string(),
            "--allow-privileged=true".to_string(),
            "--disable-admission-plugins=ServiceAccount".to_string(),
            "--profiling=false".to_string(),
        ];
        api_args.extend(extra_args.iter().cloned());
        let apiserver = ChildGuard::spawn(
            "kube-apiserver",
            &bins.kube_apiserver,
            &api_args,
            &root.join("kube-apiserver.log"),
        )?;
        let apiserver_bin = bins.kube_apiserver.clone();

        let server = format!("https://127.0.0.1:{api_port}");
        let kubeconfig = root.join("kubeconfig");
        write(
            &kubeconfig,
            &kubeconfig_json(name, &server, &pki.ca_cert_pem, &token),
        )?;
        let client = client_from(&kubeconfig).await?;

        let mut processes = Processes {
            apiserver_bin,
            api_args,
            restarts: 0,
            apiserver,
            etcd,
        };
        if let Err(e) = wait_ready(&client, Some(&mut processes)).await {
            let logs = format!(
                "{}\n{}",
                processes.apiserver.log_tail(30),
                processes.etcd.log_tail(15)
            );
            return Err(match e {
                Error::Timeout { what, secs } => Error::Timeout {
                    what: format!("cluster {name}: {what}\n{logs}"),
                    secs,
                },
                other => Error::Startup(format!("cluster {name}: {other}\n{logs}")),
            });
        }
        // Counted in docs/testing.md ("Shared API servers"): grep the test output for it.
        eprintln!("capstan-testenv: started an API server of its own for {name}");
        Ok(Self {
            name: name.to_string(),
            server,
            kubeconfig,
            client,
            namespace: "default".to_string(),
            processes: Some(processes),
            dir,
        })
    }

    /// Kills the kube-apiserver (SIGKILL); etcd keeps running. For fault tests: requests
    /// fail until [`TestCluster::start_apiserver`]. Only a server of the test's own
    /// ([`TestCluster::start`]) can be killed: on the shared one this panics (a test that
    /// kills its server must not share it).
    pub fn kill_apiserver(&mut self) {
        match &mut self.processes {
            Some(p) => p.apiserver.kill(),
            None => panic!(
                "{}: the shared API server cannot be killed; start one with TestCluster::start",
                self.name
            ),
        }
    }

    /// Starts the kube-apiserver again (same port, same etcd) and waits until it is ready.
    pub async fn start_apiserver(&mut self) -> Result<()> {
        let Some(p) = &mut self.processes else {
            return Err(Error::Startup(format!(
                "{}: the shared API server cannot be restarted; start one with TestCluster::start",
                self.name
            )));
        };
        p.restarts += 1;
        let log = self.dir.path().join(format!("kube-apiserver-{}.log", p.restarts));
        p.apiserver = ChildGuard::spawn("kube-apiserver", &p.apiserver_bin, &p.api_args, &log)?;
        wait_ready(&self.client, Some(p)).await
    }

    /// True when this is a namespace on the run's shared server rather than a server of the
    /// test's own.
    pub fn is_shared(&self) -> bool {
        self.processes.is_none()
    }

    /// The kubeconfig context's namespace: `default` on a server of the test's own, the
    /// test's fresh namespace on the shared server.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Creates namespace `name`, for a test that needs one besides its own.
    pub async fn create_namespace(&self, name: &str) -> Result<()> {
        let object = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &object)
            .await?;
        Ok(())
    }

    /// A client authenticated as a cluster admin (group `system:masters`).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// A client acting as `user` in `groups` (impersonated by the admin), for testing what an
    /// identity with restricted RBAC can do, e.g. the operator's ServiceAccount
    /// (`system:serviceaccount:<ns>:<name>`; its groups are added by the caller if needed).
    pub async fn client_as(&self, user: &str, groups: &[&str]) -> Result<Client> {
        let kc = Kubeconfig::read_from(&self.kubeconfig)?;
        let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
        config.auth_info.impersonate = Some(user.to_string());
        config.auth_info.impersonate_groups =
            (!groups.is_empty()).then(|| groups.iter().map(|g| g.to_string()).collect());
        Ok(Client::try_from(config)?)
    }

    /// Writes to `path` a kubeconfig of the admin impersonating `user` in `groups` (a process
    /// run with it acts as that user, as [`TestCluster::client_as`] does in this one), e.g. to
    /// tell one process's requests from another's in an audit log.
    pub fn write_kubeconfig_as(&self, user: &str, groups: &[&str], path: &Path) -> Result<()> {
        let mut kc = Kubeconfig::read_from(&self.kubeconfig)?;
        for named in &mut kc.auth_infos {
            if let Some(auth) = named.auth_info.as_mut() {
                auth.impersonate = Some(user.to_string());
                auth.impersonate_groups =
                    (!groups.is_empty()).then(|| groups.iter().map(|g| g.to_string()).collect());
            }
        }
        // JSON is YAML: kubeconfig readers take it.
        let text = serde_json::to_vec_pretty(&kc).map_err(|e| Error::Yaml {
            path: path.to_path_buf(),
            message: format!("encoding the kubeconfig for {user}: {e}"),
        })?;
        std::fs::write(path, text).map_err(io_err("writing an impersonating kubeconfig"))
    }

    /// A kubeconfig file for this cluster (admin token, the test CA), e.g. for the CLI.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> &str {
        &self.server
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Process ids of (etcd, kube-apiserver), for tests of the teardown itself. Panics on the
    /// shared server, whose processes are not the test's.
    pub fn pids(&self) -> (u32, u32) {
        match &self.processes {
            Some(p) => (p.etcd.pid(), p.apiserver.pid()),
            None => panic!(
                "{}: the shared API server's processes are not the test's",
                self.name
            ),
        }
    }

    /// The cluster's scratch directory (logs, certificates, etcd data; on the shared server
    /// only the test's kubeconfig).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Waits for `/readyz` and for the `default` namespace (created shortly after start); with
/// `processes`, fails as soon as one of them exits.
async fn wait_ready(client: &Client, mut processes: Option<&mut Processes>) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    loop {
        if let Some(p) = processes.as_deref_mut() {
            for guard in [&mut p.etcd, &mut p.apiserver] {
                if let Some(exit) = guard.exited() {
                    return Err(Error::Startup(exit));
                }
            }
        }
        let req = http::Request::get("/readyz").body(Vec::new());
        let ready = match req {
            Ok(req) => client.request_text(req).await.is_ok_and(|t| t.trim() == "ok"),
            Err(_) => false,
        };
        if ready && matches!(namespaces.get_opt("default").await, Ok(Some(_))) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                what: "kube-apiserver /readyz".into(),
                secs: READY_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Builds a client from a kubeconfig file, exactly as a user of that file would.
pub async fn client_from(kubeconfig: &Path) -> Result<Client> {
    let kc = Kubeconfig::read_from(kubeconfig)?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

pub(crate) fn kubeconfig_json(name: &str, server: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    // JSON is YAML: every kubeconfig reader accepts it.
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "capstan-admin", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "capstan-admin", "namespace": "default"}}],
        "current-context": name,
    });
    format!("{doc:#}\n")
}

/// Three distinct free loopback ports (all held open until picked, so they differ).
fn free_ports() -> Result<[u16; 3]> {
    let bind = || TcpListener::bind("127.0.0.1:0").map_err(io_err("picking a free port"));
    let listeners = [bind()?, bind()?, bind()?];
    let mut ports = [0u16; 3];
    for (port, l) in ports.iter_mut().zip(&listeners) {
        *port = l.local_addr().map_err(io_err("reading a bound port"))?.port();
    }
    Ok(ports)
}

/// A token unique per cluster; only loopback clients ever see it.
fn admin_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "capstan-{:x}-{:x}-{}",
        nanos,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(io_err(format!("writing {}", path.display())))
}
