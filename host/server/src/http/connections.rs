//! Connection admission, before a byte is read: how many connections the front holds,
//! which peers may open more, which connection gives way when all are open, and whose
//! address a request comes from behind a trusted reverse proxy.
//!
//! - **Per address, only until it authenticates.** A peer address may hold
//!   `max_connections_per_ip` connections that have not yet carried an authenticated
//!   request. A connection past that is on *probation*: its first request must arrive
//!   within [`PROBATION`] and authenticate, or the connection is closed (after the
//!   request's answer, when it sent one): an address cannot hold more idle
//!   connections than its share, yet a burst of new connections from a proxy that
//!   carries tenants' requests is served, not reset. A connection whose request
//!   authenticated (a tenant's token, or any request on a server without tokens) no
//!   longer counts: behind a reverse proxy every tenant shares the proxy's address,
//!   and their work is admitted per tenant instead (`admission`). Connections from a
//!   `trusted_proxies` address never count: they carry many clients' requests.
//! - **In total, with room made.** At `max_connections` a new connection closes the
//!   oldest *idle* connection to make room: first one that never authenticated, else
//!   any (an idle keep-alive connection is reopened at the cost of a handshake). So
//!   connections held open by anyone, from however many addresses, cannot keep the
//!   next client out. When every connection is busy with a request, the new one gets
//!   503 with `Retry-After` on its first request instead of a reset (at most
//!   [`MAX_OVERFLOW`] of those at once; past that, closed).

use ipnet::IpNet;
use parking_lot::{Mutex, MutexGuard};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

/// How long a connection on probation (its address holds `max_connections_per_ip`
/// unauthenticated connections already) may take to send a request's headers; it
/// also bounds how long it may sit idle between requests. A client sends its request
/// as soon as it connects: one second is ample for it, and is all an address gets to
/// hold a connection beyond its share without saying who it is.
pub(super) const PROBATION: std::time::Duration = std::time::Duration::from_secs(1);

/// Connections answered 503 at once while every connection is busy: each costs a task
/// and a read of one request head (bounded by the header timeout), so they are
/// bounded too; a client past it sees a refused connection.
pub(super) const MAX_OVERFLOW: usize = 64;

/// Open connections: in total, not yet authenticated per peer address, and which may
/// be closed to make room.
pub(super) struct Connections {
    state: Mutex<State>,
    max_total: usize,
    max_per_ip: usize,
    /// `trusted_proxies`.
    trusted: Vec<IpNet>,
    /// Connections being answered 503 ([`MAX_OVERFLOW`]).
    overflow: AtomicUsize,
}

#[derive(Default)]
struct State {
    total: usize,
    /// Unauthenticated connections by peer address.
    unauthenticated: HashMap<IpAddr, usize>,
    /// Every open connection by id; ids grow, so the first is the oldest.
    open: BTreeMap<u64, Entry>,
    next: u64,
}

struct Entry {
    /// Counted in `unauthenticated` under this address.
    counted: Option<IpAddr>,
    /// A request on it authenticated.
    authenticated: bool,
    /// Requests in flight (their responses not yet sent).
    busy: usize,
    /// Closes the connection (gracefully: an idle one at once).
    close: CancellationToken,
}

/// What [`Connections::admit`] decided.
pub(super) enum Admission {
    /// Serve it; it holds its place until the slot drops.
    Open(Arc<ConnectionSlot>),
    /// Every connection is busy: answer its request with 503.
    Overflow(OverflowSlot),
    /// Too many answered 503 already: close it before reading anything.
    Refused,
}

/// One admitted connection; frees its place when dropped.
pub(super) struct ConnectionSlot {
    connections: Arc<Connections>,
    id: u64,
    /// The peer's address (canonical: an IPv4-mapped IPv6 address is the IPv4 one).
    pub(super) peer: IpAddr,
    /// Cancelled when the connection must close to make room for another.
    pub(super) close: CancellationToken,
    /// Its address held `max_connections_per_ip` unauthenticated connections when it
    /// came: it must authenticate on its first request ([`PROBATION`]).
    pub(super) probation: bool,
}

/// One connection being answered 503; frees its place when dropped.
pub(super) struct OverflowSlot(Arc<Connections>);

/// A request in flight on a connection: the connection is not idle (and may not be
/// closed to make room) until the response is sent and this drops.
pub(super) struct Busy(Arc<ConnectionSlot>);

impl Connections {
    /// The caps, and the proxies whose connections carry many clients.
    pub(super) fn new(max_total: usize, max_per_ip: usize, trusted: Vec<IpNet>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            max_total: max_total.max(1),
            max_per_ip: max_per_ip.max(1),
            trusted,
            overflow: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Whether `ip` is one of the `trusted_proxies`.
    pub(super) fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|net| net.contains(&ip))
    }

    /// The address a request on a connection from `peer` comes from: `peer`, unless
    /// it is a trusted proxy; then the rightmost hop of the request's
    /// `X-Forwarded-For` (else `Forwarded`) that is not a trusted proxy, or the
    /// leftmost hop when all are. A hop that is not an address ends the walk at the
    /// last trusted one: what lies left of it is anyone's writing.
    pub(super) fn client(&self, peer: IpAddr, headers: &hyper::HeaderMap) -> IpAddr {
        if !self.is_trusted(peer) {
            return peer;
        }
        let mut hops = forwarded_for(headers);
        let mut client = peer;
        while let Some(hop) = hops.pop() {
            let Some(ip) = hop else {
                return client;
            };
            client = ip;
            if !self.is_trusted(ip) {
                return ip;
            }
        }
        client
    }

    /// A place for a new connection from `peer`.
    pub(super) fn admit(self: &Arc<Self>, peer: IpAddr) -> Admission {
        let peer = peer.to_canonical();
        let counted = (!self.is_trusted(peer)).then_some(peer);
        let mut state = self.lock();
        let probation = counted.is_some_and(|ip| {
            state.unauthenticated.get(&ip).copied().unwrap_or(0) >= self.max_per_ip
        });
        if state.total >= self.max_total && !Self::make_room(&mut state) {
            drop(state);
            if self.overflow.fetch_add(1, Ordering::Relaxed) >= MAX_OVERFLOW {
                self.overflow.fetch_sub(1, Ordering::Relaxed);
                return Admission::Refused;
            }
            return Admission::Overflow(OverflowSlot(Arc::clone(self)));
        }
        state.total += 1;
        if let Some(ip) = counted {
            *state.unauthenticated.entry(ip).or_insert(0) += 1;
        }
        state.next += 1;
        let id = state.next;
        let close = CancellationToken::new();
        state.open.insert(
            id,
            Entry {
                counted,
                authenticated: false,
                busy: 0,
                close: close.clone(),
            },
        );
        Admission::Open(Arc::new(ConnectionSlot {
            connections: Arc::clone(self),
            id,
            peer,
            close,
            probation,
        }))
    }

    /// Closes the oldest idle connection that never authenticated, else the oldest
    /// idle one, and forgets it at once (it goes as soon as its task sees the token).
    /// Whether there was one.
    fn make_room(state: &mut State) -> bool {
        let idle = |authenticated: bool| {
            state
                .open
                .iter()
                .find(|(_, e)| e.busy == 0 && e.authenticated == authenticated)
                .map(|(id, _)| *id)
        };
        let Some(id) = idle(false).or_else(|| idle(true)) else {
            return false;
        };
        if let Some(entry) = state.open.remove(&id) {
            entry.close.cancel();
            state.total = state.total.saturating_sub(1);
            if let Some(ip) = entry.counted {
                uncount(&mut state.unauthenticated, ip);
            }
        }
        true
    }
}

/// One fewer unauthenticated connection from `ip`.
fn uncount(unauthenticated: &mut HashMap<IpAddr, usize>, ip: IpAddr) {
    if let Some(n) = unauthenticated.get_mut(&ip) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            unauthenticated.remove(&ip);
        }
    }
}

/// The hops of a request's `X-Forwarded-For` (every instance, in order), else of its
/// `Forwarded` header's `for=` parameters, leftmost first; `None` for a hop that is
/// not an IP address (`unknown`, an obfuscated name, garbage).
fn forwarded_for(headers: &hyper::HeaderMap) -> Vec<Option<IpAddr>> {
    let values = |name: &str| {
        headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
    };
    let xff = values("x-forwarded-for");
    if !xff.is_empty() {
        return xff
            .into_iter()
            .flat_map(|v| match v {
                Some(v) => v.split(',').map(parse_hop).collect(),
                None => vec![None],
            })
            .collect();
    }
    values("forwarded")
        .into_iter()
        .flat_map(|v| match v {
            Some(v) => v
                .split(',')
                .filter_map(|element| {
                    element.split(';').find_map(|pair| {
                        let (key, value) = pair.split_once('=')?;
                        key.trim()
                            .eq_ignore_ascii_case("for")
                            .then(|| parse_hop(value))
                    })
                })
                .collect(),
            None => vec![None],
        })
        .collect()
}

/// One hop: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`, `[2001:db8::1]:443`, or any of
/// them quoted (`Forwarded`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim().trim_matches('"');
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Ok(addr) = hop.parse::<std::net::SocketAddr>() {
        return Some(addr.ip().to_canonical());
    }
    hop.strip_prefix('[')
        .and_then(|h| h.split_once(']'))
        .and_then(|(ip, _)| ip.parse::<IpAddr>().ok())
        .map(|ip| ip.to_canonical())
}

impl ConnectionSlot {
    /// A request on this connection authenticated: it no longer counts against its
    /// address's `max_connections_per_ip`.
    pub(super) fn authenticated(&self) {
        let mut state = self.connections.lock();
        let counted = state.open.get_mut(&self.id).and_then(|entry| {
            entry.authenticated = true;
            entry.counted.take()
        });
        if let Some(ip) = counted {
            uncount(&mut state.unauthenticated, ip);
        }
    }

    /// Whether no request on it has authenticated yet.
    pub(super) fn is_unauthenticated(&self) -> bool {
        self.connections
            .lock()
            .open
            .get(&self.id)
            .is_some_and(|entry| !entry.authenticated)
    }

    /// Marks a request in flight until the returned guard drops.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        if let Some(entry) = self.connections.lock().open.get_mut(&self.id) {
            entry.busy += 1;
        }
        Busy(Arc::clone(self))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let slot = &self.0;
        if let Some(entry) = slot.connections.lock().open.get_mut(&slot.id) {
            entry.busy = entry.busy.saturating_sub(1);
        }
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut state = self.connections.lock();
        // Not there: it was closed to make room, and its place given away then.
        if let Some(entry) = state.open.remove(&self.id) {
            state.total = state.total.saturating_sub(1);
            if let Some(ip) = entry.counted {
                uncount(&mut state.unauthenticated, ip);
            }
        }
    }
}

impl Drop for OverflowSlot {
    fn drop(&mut self) {
        self.0.overflow.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(connections: &Arc<Connections>, ip: IpAddr) -> Option<Arc<ConnectionSlot>> {
        match connections.admit(ip) {
            Admission::Open(slot) => Some(slot),
            _ => None,
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn past_its_unauthenticated_connections_an_address_s_next_ones_are_on_probation() {
        let connections = Arc::new(Connections::new(100, 2, Vec::new()));
        let on_probation = |ip: IpAddr| open(&connections, ip).unwrap().probation;
        let a1 = open(&connections, ip("127.0.0.1")).unwrap();
        let _a2 = open(&connections, ip("127.0.0.1")).unwrap();
        assert!(!a1.probation);
        assert!(on_probation(ip("127.0.0.1")), "per address");
        assert!(!on_probation(ip("127.0.0.2")), "another address");
        // Behind a proxy: once its request authenticated, a connection leaves the
        // address's count, and the next one is not on probation.
        a1.authenticated();
        assert!(!a1.is_unauthenticated());
        let a3 = open(&connections, ip("127.0.0.1")).unwrap();
        assert!(!a3.probation);
        assert!(on_probation(ip("127.0.0.1")));
        // An IPv4-mapped IPv6 peer is the same address.
        assert!(on_probation(ip("::ffff:127.0.0.1")));
    }

    #[test]
    fn a_trusted_proxy_is_not_capped_per_address() {
        let proxy: IpNet = "10.0.0.0/8".parse().unwrap();
        let connections = Arc::new(Connections::new(100, 1, vec![proxy]));
        let held: Vec<_> = (0..10)
            .map(|_| open(&connections, ip("10.1.1.1")).unwrap())
            .collect();
        assert!(held.iter().all(|c| !c.probation));
        let _one = open(&connections, ip("192.0.2.1")).unwrap();
        assert!(open(&connections, ip("192.0.2.1")).unwrap().probation);
    }

    #[test]
    fn when_all_are_open_the_oldest_idle_unauthenticated_connection_makes_room() {
        let connections = Arc::new(Connections::new(3, 10, Vec::new()));
        // Three addresses' idle connections fill the total (the 17-address attack).
        let idle_a = open(&connections, ip("127.0.0.1")).unwrap();
        let idle_b = open(&connections, ip("127.0.0.2")).unwrap();
        let working = open(&connections, ip("127.0.0.3")).unwrap();
        working.authenticated();
        let _request = working.busy();
        let newcomer = open(&connections, ip("127.0.0.4")).unwrap();
        assert!(idle_a.close.is_cancelled(), "the oldest idle one gives way");
        assert!(!idle_b.close.is_cancelled() && !working.close.is_cancelled());
        // Its place was given away at once; dropping it later frees nothing twice.
        drop(idle_a);
        newcomer.authenticated();
        let _busy_new = newcomer.busy();
        let _busy_b = idle_b.busy();
        // Every connection busy: the next one is answered 503, not closed.
        assert!(matches!(
            connections.admit(ip("127.0.0.5")),
            Admission::Overflow(_)
        ));
    }

    #[test]
    fn an_idle_authenticated_connection_gives_way_when_no_unauthenticated_one_is_idle() {
        let connections = Arc::new(Connections::new(2, 10, Vec::new()));
        let keep_alive = open(&connections, ip("127.0.0.1")).unwrap();
        keep_alive.authenticated();
        let busy = open(&connections, ip("127.0.0.2")).unwrap();
        let _request = busy.busy();
        assert!(open(&connections, ip("127.0.0.3")).is_some());
        assert!(keep_alive.close.is_cancelled());
    }

    #[test]
    fn overflow_answers_are_bounded() {
        let connections = Arc::new(Connections::new(1, 10, Vec::new()));
        let only = open(&connections, ip("127.0.0.1")).unwrap();
        let _busy = only.busy();
        let overflow: Vec<_> = (0..MAX_OVERFLOW)
            .map(|_| connections.admit(ip("127.0.0.2")))
            .collect();
        assert!(overflow.iter().all(|a| matches!(a, Admission::Overflow(_))));
        assert!(matches!(
            connections.admit(ip("127.0.0.2")),
            Admission::Refused
        ));
        drop(overflow);
        assert!(matches!(
            connections.admit(ip("127.0.0.2")),
            Admission::Overflow(_)
        ));
    }

    #[test]
    fn the_client_behind_trusted_proxies_is_the_rightmost_untrusted_hop() {
        let trusted = vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        let connections = Connections::new(10, 10, trusted);
        let client = |peer: &str, headers: &[(&str, &str)]| {
            let mut map = hyper::HeaderMap::new();
            for (name, value) in headers {
                map.append(
                    hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
            connections.client(ip(peer), &map).to_string()
        };
        // (peer, headers, client, why)
        type Row<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
        let rows: &[Row<'_>] = &[
            (
                "192.0.2.9",
                &[("x-forwarded-for", "1.1.1.1")],
                "192.0.2.9",
                "an untrusted peer's header is ignored",
            ),
            (
                "10.0.0.1",
                &[],
                "10.0.0.1",
                "a proxy without the header is the client",
            ),
            (
                "10.0.0.1",
                &[("x-forwarded-for", "6.6.6.6, 203.0.113.5")],
                "203.0.113.5",
                "what the client wrote is left of the hop the proxy added",
            ),
            (
                "10.0.0.1",
                &[("x-forwarded-for", "203.0.113.5, 10.2.2.2")],
                "203.0.113.5",
                "trusted hops are skipped",
            ),
            (
                "10.0.0.1",
                &[
                    ("x-forwarded-for", "6.6.6.6"),
                    ("x-forwarded-for", "203.0.113.5"),
                ],
                "203.0.113.5",
                "several header lines are one list",
            ),
            (
                "10.0.0.1",
                &[("x-forwarded-for", "10.3.3.3, 10.2.2.2")],
                "10.3.3.3",
                "all trusted: the leftmost",
            ),
            (
                "10.0.0.1",
                &[("x-forwarded-for", "203.0.113.5, garbage, 10.2.2.2")],
                "10.2.2.2",
                "an unreadable hop stops the walk at the last trusted one",
            ),
            (
                "10.0.0.1",
                &[(
                    "forwarded",
                    "for=6.6.6.6, for=\"[2001:db8::7]:4711\";proto=https",
                )],
                "2001:db8::7",
                "Forwarded's for= when there is no X-Forwarded-For",
            ),
            (
                "10.0.0.1",
                &[("x-forwarded-for", "203.0.113.5:8080")],
                "203.0.113.5",
                "a port is dropped",
            ),
            (
                "::ffff:10.0.0.1",
                &[("x-forwarded-for", "203.0.113.5")],
                "203.0.113.5",
                "an IPv4-mapped peer is its IPv4 address",
            ),
        ];
        for (peer, headers, expected, why) in rows {
            let peer = ip(peer).to_canonical().to_string();
            assert_eq!(client(&peer, headers), *expected, "{why}");
        }
    }
}
