//! Following a mount's upstream for as long as the server lives: connected (retried with backoff while it is down),
//! its lists read again whenever it says they changed and applied to the running server's registry, its fixed
//! resources subscribed to, and the server's clients told what changed.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::upstream::{Lists, Shared};
use super::{relayed, Composer, Mounted};
use crate::base::sync::Unpoisoned;
use crate::client::ListenFilter;
use crate::server::{hub, Server, ServerInner};

/// Follows one mount's upstream for as long as the server lives.
pub(super) async fn follow(server: Weak<ServerInner>, index: usize, mounted: Arc<Mounted>) {
    let shared = mounted.shared().clone();
    let mut backoff = Duration::from_millis(250);
    loop {
        if server.strong_count() == 0 {
            return;
        }
        // Told of a failed connection from now on; listening before the lists are read, so that a change between
        // the two is not missed.
        let failed = shared.changed.notified();
        tokio::pin!(failed);
        failed.as_mut().enable();
        // Its list changes, and updates of the resources it lists (which reach the clients subscribed here).
        let watched = watched_resources(&shared).await;
        let listening = match shared.client().await {
            Ok(client) => {
                let mut filter = ListenFilter::new().tools().prompts().resources();
                for uri in &watched {
                    filter = filter.resource(uri.clone());
                }
                match client.listen(filter).await {
                    Ok(listening) => Some(listening),
                    // An upstream that takes no subscriptions: its lists alone.
                    Err(_) => client.listen(ListenFilter::new().tools().prompts().resources()).await.ok(),
                }
            }
            Err(_) => None,
        };
        match shared.refresh().await {
            Ok(()) => {
                backoff = Duration::from_millis(250);
                let lists = shared.lists.locked().clone().unwrap_or_default();
                let Some(inner) = server.upgrade() else { return };
                resync(&Server { inner }, index, lists);
                if watched_resources(&shared).await != watched {
                    continue; // listen again, to the resources it lists now
                }
                let Some(mut listening) = listening else {
                    // An upstream that cannot be followed: served as it listed, until its connection fails.
                    failed.await;
                    continue;
                };
                // Until it says a list changed, or its connection fails; checking now and then that the server
                // still lives.
                loop {
                    tokio::select! {
                        () = &mut failed => break,
                        heard = listening.next() => match heard {
                            Some(heard) if !heard.method.ends_with("/list_changed") => continue,
                            Some(_) => break,
                            None => {
                                // The listen ended (the upstream stopped it, or its connection broke): listen again.
                                tokio::time::sleep(Duration::from_millis(250)).await;
                                break;
                            }
                        },
                        () = tokio::time::sleep(Duration::from_secs(5)) => {
                            if server.strong_count() == 0 {
                                return;
                            }
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(upstream = %mounted.describe(), error = %e, retry_in = ?backoff, "the upstream is unreachable");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// The most resources of one upstream the proxy subscribes to.
const MAX_WATCHED: usize = 1_000;

/// The fixed resources an upstream lists, when it takes subscriptions (every 2026 server does, through
/// `subscriptions/listen`; a 2025 one says `resources.subscribe`).
async fn watched_resources(shared: &Arc<Shared>) -> Vec<String> {
    let takes = match shared.client().await {
        Ok(client) => {
            client.era() == crate::context::Era::V2026 || client.server_capabilities()["resources"]["subscribe"] == true
        }
        Err(_) => false,
    };
    if !takes {
        return Vec::new();
    }
    let lists = shared.lists.locked();
    let resources = lists.as_ref().map(|l| l.resources.as_slice()).unwrap_or_default();
    resources.iter().filter_map(|r| r["uri"].as_str().map(str::to_owned)).take(MAX_WATCHED).collect()
}

/// Applies a mount's new lists to the running server's registry, and tells its clients what changed.
fn resync(server: &Server, index: usize, lists: Lists) {
    let Some(composer) = server.inner.parts().get::<Composer>() else { return };
    let changed = server.edit_registry(|registry| composer.apply(index, lists, registry, false)).unwrap_or_default();
    for list in changed {
        relayed(server, "list_changed");
        server.publish(hub::Change::ListChanged { list, edit: None });
    }
}
