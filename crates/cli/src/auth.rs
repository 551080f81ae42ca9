//! `mcp-budget login <URL>`, `logout <URL>` and `auth status`: OAuth sign-ins to remote MCP
//! servers, made ahead of time and looked at. They use the same kept sign-ins as
//! `proxy --upstream` (the proxy crate's `relay::oauth`), so signing in here serves every proxy
//! of that server on the machine.

use std::process::ExitCode;

use comfy_table::{Table, presets};
use mcp_budget_proxy::relay::oauth::{self, OAuthError};

use crate::proxy::remote::OAuthArgs;

/// `mcp-budget login <URL>`.
#[derive(Debug, clap::Args)]
pub(crate) struct LoginArgs {
    /// The remote MCP server's Streamable HTTP endpoint
    #[arg(value_name = "URL")]
    url: String,

    #[command(flatten)]
    oauth: OAuthArgs,

    /// Print the sign-in URL only; do not open a browser
    #[arg(long)]
    no_browser: bool,
}

/// `mcp-budget logout <URL>`.
#[derive(Debug, clap::Args)]
pub(crate) struct LogoutArgs {
    /// The remote MCP server's Streamable HTTP endpoint
    #[arg(value_name = "URL")]
    url: String,
}

/// `mcp-budget auth …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum AuthCommand {
    /// List the kept sign-ins: server, authorization server, client, expiry, scopes (never
    /// the tokens).
    Status,
}

/// Signs in to `args.url` and keeps the sign-in.
pub(crate) fn run_login(args: LoginArgs) -> anyhow::Result<ExitCode> {
    let mut options = args.oauth.options(None);
    options.open_browser = !args.no_browser;
    let runtime = crate::runtime::runtime()?;
    match runtime.block_on(oauth::login(&args.url, options)) {
        Ok(shown) => {
            println!("signed in to {shown}");
            Ok(ExitCode::SUCCESS)
        }
        Err(OAuthError::NotNeeded(text)) => {
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(e.into()),
    }
}

/// Forgets the sign-in to `args.url`.
pub(crate) fn run_logout(args: &LogoutArgs) -> anyhow::Result<ExitCode> {
    if oauth::logout(&args.url)? {
        println!("signed out of {}", args.url);
    } else {
        println!("no sign-in kept for {}", args.url);
    }
    Ok(ExitCode::SUCCESS)
}

/// `auth status`.
pub(crate) fn run_auth(command: &AuthCommand) -> anyhow::Result<ExitCode> {
    match command {
        AuthCommand::Status => {
            let (dir, list) = oauth::status()?;
            if list.is_empty() {
                println!("no sign-ins kept (in {})", dir.display());
                return Ok(ExitCode::SUCCESS);
            }
            let mut table = Table::new();
            table.load_style(presets::ASCII_MARKDOWN);
            table.set_header(vec![
                "server",
                "authorization server",
                "client",
                "signed in",
                "expires in",
                "refresh",
                "scopes",
            ]);
            for s in &list {
                let expires = match s.expires_in_s {
                    Some(s) if s <= 0 => "expired".to_owned(),
                    Some(s) => format!("{} min", s / 60),
                    None => "-".to_owned(),
                };
                table.add_row(vec![
                    s.server.clone(),
                    s.authorization_server.clone(),
                    s.client.clone(),
                    if s.signed_in { "yes" } else { "no" }.to_owned(),
                    expires,
                    if s.refreshable { "yes" } else { "no" }.to_owned(),
                    s.scope.clone().unwrap_or_default(),
                ]);
            }
            println!("{table}");
            println!("kept in {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
