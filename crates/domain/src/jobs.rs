//! The daemon's background sweep: due widgets expire, expired browser
//! sessions and idle rate-limit buckets are deleted, and audit rows a
//! daemon staged but did not seal join the chain. `serve` runs it.

use std::sync::Arc;
use std::time::Duration;

use crate::Core;

/// Expires widgets and deletes expired browser sessions, every `every`.
pub async fn sweep_forever(state: Arc<Core>, every: Duration) {
    loop {
        // One daemon of a deployment sweeps at a time (on PostgreSQL an
        // advisory lock; the guarded transitions make a second sweep harmless
        // anyway, but it would only repeat the first one's reads).
        let swept = state.db.exclusively("sweep", sweep(&state)).await;
        if let Err(err) = swept {
            tracing::error!(error = %err, "the sweep failed; retrying later");
        }
        tokio::time::sleep(every).await;
    }
}

/// One round of the background sweep: due widgets expire, expired browser
/// sessions and idle rate-limit buckets are deleted, and audit rows that a
/// daemon staged but did not seal (it was killed between its commit and
/// its seal; PostgreSQL only) join the chain.
pub async fn sweep(state: &Core) -> anyhow::Result<()> {
    match crate::audit::seal::seal(&state.db.write).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(sealed = n, "sealed audit rows another daemon left staged"),
        Err(err) => {
            tracing::error!(error = %err, "sealing staged audit rows failed; retrying later")
        }
    }
    match crate::widgets::expire_due(state).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "expired pending widgets"),
        Err(err) => tracing::error!(error = %err, "the expiry sweep failed; retrying later"),
    }
    if let Err(err) = crate::auth::browser::delete_expired(&state.db).await {
        tracing::error!(error = %err, "deleting expired browser sessions failed");
    }
    let mut tx = state.db.begin_write().await?;
    crate::limits::forget_idle(&mut tx).await?;
    tx.commit().await?;
    Ok(())
}
