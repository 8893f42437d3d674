//! `capstan version`: what binary this is, which Helm it renders like, which API it serves.

use std::io::Write;

/// Arguments of `capstan version`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format (default: text).
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    output: Option<Format>,

    /// Deprecated: use `-o json`.
    #[arg(long, conflicts_with = "output")]
    json: bool,
}

/// Output formats of `capstan version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// One JSON object (camelCase keys, like every JSON capstan prints).
    Json,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let info = info();
    if args.json {
        eprintln!("warning: --json is deprecated, use -o json");
    }
    let mut out = std::io::stdout().lock();
    if args.json || args.output == Some(Format::Json) {
        writeln!(out, "{}", serde_json::to_string(&info)?)?;
    } else {
        write!(out, "{}", text(&info))?;
    }
    Ok(())
}

/// Version facts reported by `capstan version`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    pub version: &'static str,
    /// The Helm release whose rendering the native engine reproduces.
    pub helm_compat: &'static str,
    /// The API version of the `clusterstack.x-k8s.io` kinds the operator serves.
    pub api_version: String,
}

pub fn info() -> Info {
    use capstan_operator::api::{GROUP, VERSION};
    Info {
        version: env!("CARGO_PKG_VERSION"),
        helm_compat: "v4.2.3",
        api_version: format!("{GROUP}/{VERSION}"),
    }
}

/// The text form: one fact per line.
fn text(info: &Info) -> String {
    format!(
        "capstan {}\nhelm engine: {} (renders like `helm template` of this release)\napi: {}\n",
        info.version, info.helm_compat, info.api_version
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_the_helm_version_and_the_api_version() {
        let info = info();
        assert_eq!(
            text(&info),
            format!(
                "capstan {}\nhelm engine: v4.2.3 (renders like `helm template` of this release)\n\
                 api: clusterstack.x-k8s.io/v1alpha1\n",
                env!("CARGO_PKG_VERSION")
            )
        );
        let json = serde_json::to_value(&info).expect("JSON");
        assert_eq!(json["helmCompat"], "v4.2.3");
        assert_eq!(json["apiVersion"], "clusterstack.x-k8s.io/v1alpha1");
    }
}
