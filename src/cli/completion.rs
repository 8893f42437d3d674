//! `capstan completion SHELL`: a completion script for the shell, generated from the CLI's
//! own definition (so it never lists a flag the binary lacks).

use std::io::Write;

use clap_complete::Shell;

/// Arguments of `capstan completion`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Load it for this shell session or install it:\n  \
    bash: source <(capstan completion bash)   (or save it in ~/.local/share/bash-completion/completions/capstan)\n  \
    zsh:  capstan completion zsh > \"${fpath[1]}/_capstan\"\n  \
    fish: capstan completion fish > ~/.config/fish/completions/capstan.fish")]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the script for `cli`, the whole command-line definition (given by `cli/mod.rs`, so
/// this file need not name it).
pub fn run(args: &Args, cli: clap::Command) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(&script(args.shell, cli))?;
    Ok(())
}

/// The completion script of `capstan` (whose definition is `command`) for `shell`.
pub fn script(shell: Shell, mut command: clap::Command) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "capstan", &mut script);
    script
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every subcommand, as the CLI defines them (not a list kept by hand).
    fn subcommands() -> Vec<String> {
        let command = crate::cli::Cli::command();
        command
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect()
    }

    #[test]
    fn each_shell_completes_every_subcommand_and_their_flags() {
        let names = subcommands();
        for wanted in [
            "render",
            "releases",
            "apply",
            "operator",
            "install",
            "completion",
            "man",
            "version",
        ] {
            assert!(
                names.iter().any(|n| n == wanted),
                "{wanted} missing from {names:?}"
            );
        }
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = String::from_utf8(script(shell, crate::cli::Cli::command())).expect("UTF-8");
            for name in &names {
                assert!(text.contains(name.as_str()), "{shell}: no {name} in\n{text}");
            }
            // A flag of a subcommand, and a nested subcommand.
            assert!(
                text.contains("kube-version"),
                "{shell}: render's --kube-version missing"
            );
            assert!(text.contains("pull"), "{shell}: `releases pull` missing");
        }
        let bash = String::from_utf8(script(Shell::Bash, crate::cli::Cli::command())).expect("UTF-8");
        assert!(bash.contains("complete -F _capstan"), "{bash}");
        let zsh = String::from_utf8(script(Shell::Zsh, crate::cli::Cli::command())).expect("UTF-8");
        assert!(zsh.starts_with("#compdef capstan"), "{zsh}");
        let fish = String::from_utf8(script(Shell::Fish, crate::cli::Cli::command())).expect("UTF-8");
        assert!(fish.contains("complete -c capstan"), "{fish}");
    }
}
