//! The applier's client over HTTP/2 against the real API server: every watch and request of
//! one client shares one connection (counted by a TCP proxy in front of the server), and a
//! connection that goes silent is found dead by its pings, failing the watches on it so
//! their watchers reconnect.

use std::time::Duration;

use capstan_apply::client::{Timeouts, client, client_with};
use capstan_testenv::proxy::TcpProxy;
use capstan_testenv::{Binaries, TestCluster};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Config};

const WATCHES: usize = 10;

/// The cluster's kubeconfig, its server replaced by the proxy (the serving certificate is
/// for 127.0.0.1, as is the proxy).
async fn config_through(cluster: &TestCluster, proxy: &TcpProxy) -> Config {
    let mut kubeconfig = Kubeconfig::read_from(cluster.kubeconfig_path()).expect("kubeconfig");
    for named in &mut kubeconfig.clusters {
        if let Some(c) = named.cluster.as_mut() {
            c.server = Some(format!("https://127.0.0.1:{}", proxy.port()));
        }
    }
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config")
}

async fn start(test: &str) -> Option<(TestCluster, TcpProxy)> {
    let bins = Binaries::find_or_skip(test)?;
    let cluster = TestCluster::shared_or_start(&bins, test)
        .await
        .expect("cluster starts");
    let proxy = TcpProxy::start(cluster.server_url().trim_start_matches("https://")).await;
    Some((cluster, proxy))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_carries_every_watch_and_request() {
    let Some((cluster, proxy)) = start("one_connection_carries_every_watch_and_request").await else {
        return;
    };
    let client = client(config_through(&cluster, &proxy).await).expect("client");

    let request = http::Request::get("/version").body(Vec::new()).expect("request");
    let response = client.send(request.map(Into::into)).await.expect("GET /version");
    assert_eq!(response.version(), http::Version::HTTP_2, "{response:?}");

    // Watches held open (each answered with its headers) while lists run beside them.
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let version = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("resourceVersion");
    let watches = futures::future::join_all((0..WATCHES).map(|n| {
        let (api, version) = (api.clone(), version.clone());
        async move {
            let params = WatchParams::default().labels(&format!("watch={n}"));
            api.watch(&params, &version).await.expect("watch opens").boxed()
        }
    }))
    .await;
    let every = ListParams::default();
    let lists = futures::future::join_all((0..5).map(|_| api.list(&every))).await;
    assert!(lists.iter().all(Result::is_ok), "{lists:?}");
    let version = client.apiserver_version().await.expect("version");
    assert!(!version.git_version.is_empty());

    assert_eq!(
        proxy.connections(),
        1,
        "{WATCHES} watches and {} requests over one client",
        lists.len() + 3
    );
    drop(watches);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_fails_its_watches() {
    let Some((cluster, proxy)) = start("a_silent_connection_fails_its_watches").await else {
        return;
    };
    let timeouts = Timeouts {
        ping_interval: Duration::from_millis(500),
        ping_timeout: Duration::from_secs(1),
        ..Timeouts::default()
    };
    let client = client_with(config_through(&cluster, &proxy).await, timeouts).expect("client");
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let version = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("resourceVersion");
    let mut watch = api
        .watch(&WatchParams::default().timeout(290), &version)
        .await
        .expect("watch opens")
        .boxed();

    proxy.go_silent();
    let ended = tokio::time::timeout(Duration::from_secs(10), watch.next()).await;
    match ended {
        Ok(None | Some(Err(_))) => {}
        Ok(Some(Ok(event))) => panic!("an event through a silent connection: {event:?}"),
        Err(_) => panic!("the watch still hangs 10 s after its connection went silent"),
    }
}
