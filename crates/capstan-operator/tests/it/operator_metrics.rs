//! The operator's GitHub metrics fed by the releases client's observer, against the fake
//! GitHub: responses counted by status class, the rate limit left as a gauge.

use std::sync::Arc;
use std::time::Duration;

use capstan_operator::Metrics;
use capstan_source::github::{Client, Config};
use capstan_testenv::fake_github::FakeGitHub;

fn series(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ').map(str::to_string))
}

#[tokio::test]
async fn github_responses_are_counted_by_class_with_the_rate_limit_left() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("org/stacks", 3);
    gh.set_rate_limit(5000, 100, 3600);
    let metrics = Arc::new(Metrics::new());
    let client = Client::new(Config {
        base_url: gh.base_url(),
        backoff: Duration::from_millis(10),
        max_wait: Duration::from_secs(2),
        observer: Some(metrics.github_observer()),
        ..Config::default()
    })
    .expect("client");

    // 200, then an idle re-poll: 304.
    assert_eq!(client.releases("org/stacks").await.expect("list").len(), 3);
    client.releases("org/stacks").await.expect("re-poll");
    // A new release behind one 502 (retried): 502, then 200.
    gh.add_synthetic("org/stacks", 1);
    gh.fail_next(1, 502, None);
    assert_eq!(
        client.releases("org/stacks").await.expect("list after 502").len(),
        4
    );
    // A repository that does not exist: 404.
    client
        .releases("org/missing")
        .await
        .expect_err("missing repository");

    let text = metrics.encode();
    let count = |code: &str| {
        series(
            &text,
            &format!("capstan_github_requests_total{{code=\"{code}\"}}"),
        )
    };
    assert_eq!(count("2xx").as_deref(), Some("2"), "{text}");
    assert_eq!(count("3xx").as_deref(), Some("1"), "{text}");
    assert_eq!(count("4xx").as_deref(), Some("1"), "{text}");
    assert_eq!(count("5xx").as_deref(), Some("1"), "{text}");
    // Two listings and the 404 counted against the limit (the 304 and the 502 did not).
    assert_eq!(
        series(&text, "capstan_github_rate_limit_remaining").as_deref(),
        Some("97"),
        "{text}"
    );
}
