//! A whole release rendered for 100 different Clusters with the compiled charts (issue 11):
//! each of the shared release directories (`../shared/cluster-stack-releases`, skipped with a
//! note when absent) is compiled once, then every iteration renders it for 100 Clusters that
//! differ in name, namespace and pod CIDR (runtime values computed for each).

// Benchmarks may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::hint::black_box;
use std::rc::Rc;

use capstan_stack::release::Release;
use capstan_stack::render::{CompiledRelease, RenderOptions};
use capstan_stack::values::{ClusterObjects, parse_object};
use capstan_template::funcs::FuncEnv;
use criterion::{Criterion, criterion_group, criterion_main};

fn clusters() -> Vec<ClusterObjects> {
    (0..100)
        .map(|i| {
            let text = format!(
                "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: cluster-{i}\n  namespace: tenant-{}\n\
                 spec:\n  clusterNetwork:\n    pods:\n      cidrBlocks: [\"10.{}.0.0/16\"]\n    services:\n      cidrBlocks: [\"10.96.0.0/12\"]\n\
                 controlPlaneEndpoint:\n    host: 172.18.0.{}\n    port: 6443\n",
                i % 7,
                i % 250,
                i % 250
            );
            ClusterObjects::new(parse_object(&text, std::path::Path::new("bench-cluster.yaml")).expect("bench cluster"))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let Some(shared) = common::shared_dir("cluster-stack-releases") else {
        eprintln!("release bench: no shared cluster-stack-releases (set CAPSTAN_SHARED); skipped");
        return;
    };
    let clusters = clusters();
    let opts = RenderOptions {
        namespace: None,
        env: Rc::new(FuncEnv::system()),
    };
    for tag in ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v3"] {
        let dir = shared.join("cluster-stack-releases").join(tag);
        let release = Release::load(&dir).expect("shared release loads");
        let compiled = CompiledRelease::new(&release).expect("compiles");
        c.bench_function(&format!("release {tag}: 100 clusters"), |b| {
            b.iter(|| {
                for objects in &clusters {
                    black_box(compiled.render(objects, &opts).expect("renders"));
                }
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
