//! `widgetd slack …`: the deployment's Slack connection, on the data dir
//! directly (audited with actor `cli`). Credentials come from the
//! environment, never from the command line, where `ps` would show them.

use anyhow::Context;
use clap::Subcommand;
use secrecy::SecretString;

use widgetd_domain::audit::Entry;
use widgetd_domain::startup::DataDir;
use widgetd_notify::slack::{self, Credentials};

#[derive(Debug, Subcommand)]
pub enum SlackCommand {
    /// Connect a Slack app (replacing an earlier connection): its bot token
    /// from WIDGETD_SLACK_BOT_TOKEN, its signing secret from
    /// WIDGETD_SLACK_SIGNING_SECRET. Both are stored encrypted.
    Connect {
        #[arg(
            long = "bot-token-from-env",
            env = "WIDGETD_SLACK_BOT_TOKEN",
            hide = true,
            hide_env_values = true
        )]
        bot_token: Option<String>,
        #[arg(
            long = "signing-secret-from-env",
            env = "WIDGETD_SLACK_SIGNING_SECRET",
            hide = true,
            hide_env_values = true
        )]
        signing_secret: Option<String>,
    },
    /// Whether Slack is connected, how many people linked (never a credential).
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Disconnect: the credentials, every link and every message still to
    /// be sent are removed.
    Disconnect,
}

pub(super) async fn run(data: &DataDir, cmd: SlackCommand) -> anyhow::Result<()> {
    let mut tx = data.db.begin_write().await?;
    match cmd {
        SlackCommand::Connect {
            bot_token,
            signing_secret,
        } => {
            let bot_token = bot_token.context(
                "set WIDGETD_SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-…)",
            )?;
            let signing_secret = signing_secret
                .context("set WIDGETD_SLACK_SIGNING_SECRET to the app's Signing Secret")?;
            let credentials = Credentials::parse(
                SecretString::from(bot_token),
                SecretString::from(signing_secret),
            )?;
            slack::connect(&mut tx, &data.keyring, &credentials).await?;
            let entry = Entry {
                action: "slack.connect",
                ..Default::default()
            };
            widgetd_domain::audit::append_by_operator(&mut tx, entry).await?;
            tx.commit().await?;
            println!(
                "Slack is connected. People link their Slack user in widgetd's Slack settings."
            );
        }
        SlackCommand::Status { json } => {
            let status = slack::status(&mut tx).await?;
            drop(tx);
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else if let Some(at) = status.connected_at {
                println!(
                    "connected since {}; {} people linked; {} messages not delivered",
                    widgetd_domain::clock::readable(at),
                    status.linked_people,
                    status.messages_not_delivered
                );
            } else {
                println!("not connected");
            }
        }
        SlackCommand::Disconnect => {
            if slack::disconnect(&mut tx).await? {
                let entry = Entry {
                    action: "slack.disconnect",
                    ..Default::default()
                };
                widgetd_domain::audit::append_by_operator(&mut tx, entry).await?;
                tx.commit().await?;
                println!("Slack is disconnected.");
            } else {
                println!("Slack was not connected.");
            }
        }
    }
    Ok(())
}
