//! "Always" answers across the nodes of a cluster: each node's allowlist file stays the
//! truth it reads on every check (crash-safe, kept across restarts), and every second
//! each node adds its file's rules to a Redis set and the set's rules to its file. An
//! "always" given on one node so reaches every node within about two seconds; a Redis
//! that lost its data is filled again from the nodes' files; a restart of every node
//! keeps everything (the files). Write-through to the files rather than Redis alone:
//! a check never waits on the network, and Redis down changes nothing already allowed.
//!
//! Sets are keyed by the file's name (`hermetic:allowlist:NAME`): nodes that read one
//! policy name the same files. A rule removed from one node's file comes back from the
//! others: to revoke, remove it from every node's file and delete the key.

use hermetic::approval::{AllowlistFile, RuleId};
use redis::AsyncCommands as _;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often each node exchanges its allowlists with the set.
const EVERY: Duration = Duration::from_secs(1);

/// Exchanges `files` with the Redis at `url` until `stop`.
pub fn spawn(url: &str, files: Vec<PathBuf>, stop: CancellationToken) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    if files.is_empty() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            // One connection per round, for every file.
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(Duration::from_secs(1)))
                .set_response_timeout(Some(Duration::from_secs(1)));
            let mut c = match client
                .get_multiplexed_async_connection_with_config(&config)
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!("allowlists not shared this round: {e}");
                    continue;
                }
            };
            for file in &files {
                if let Err(e) = exchange(&mut c, file).await {
                    tracing::debug!("allowlist {}: not shared this round: {e}", file.display());
                }
            }
        }
    });
}

async fn exchange(
    c: &mut redis::aio::MultiplexedConnection,
    path: &std::path::Path,
) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or("no file name")?;
    let key = format!("hermetic:allowlist:{name}");
    let file = AllowlistFile::new(path);
    let local = {
        let file = file.clone();
        tokio::task::spawn_blocking(move || file.load())
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?
    };
    let encoded: Vec<String> = local
        .iter()
        .filter_map(|r| serde_json::to_string(r).ok())
        .collect();
    if !encoded.is_empty() {
        let _: () = c.sadd(&key, &encoded).await.map_err(|e| e.to_string())?;
    }
    let shared: Vec<String> = c.smembers(&key).await.map_err(|e| e.to_string())?;
    let missing: Vec<RuleId> = shared
        .iter()
        .filter_map(|s| serde_json::from_str::<RuleId>(s).ok())
        .filter(|r| !local.contains(r))
        .collect();
    if !missing.is_empty() {
        tokio::task::spawn_blocking(move || file.add(&missing))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
