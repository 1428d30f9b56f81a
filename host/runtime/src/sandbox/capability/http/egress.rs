//! Outbound HTTP for tools granted network destinations: every request a guest sends
//! through wasi:http comes here, and only goes out when
//!
//! 1. its URI's scheme, host and port match a granted [`Destination`] (the URI is what
//!    counts: a guest cannot set the `Host` header, wasmtime-wasi-http forbids it and
//!    fills it in from the URI);
//! 2. the host resolves (we resolve it ourselves) to public addresses only — loopback,
//!    private, link-local (cloud metadata at 169.254.169.254), unique-local, CGNAT and
//!    other special ranges are refused unless the matching grant names that very IP
//!    address;
//! 3. and then we connect to the vetted address ourselves, so a second lookup cannot
//!    swap in another one (DNS rebinding).
//!
//! Then the secrets the operator bound to that destination ([`SecretInjection`]) are
//! added — a header or a query parameter, replacing whatever the guest put there — so
//! a tool uses an API key it never holds. The binding's path prefix is matched on the
//! path as the server routes it ([`RequestPath`]); a request to a host with a binding
//! whose path a server could route elsewhere (a dot segment, an encoded separator,
//! also percent-encoded twice) is refused before any connection, whichever path it
//! names: the host cannot know how the destination normalises. So is a `TRACE`,
//! `TRACK` or `CONNECT` there: a server answers the first two with the request itself
//! (its headers, the secret with them) as the body. The response to a request that
//! carried a secret has every header (and trailer) scrubbed of it before the guest sees
//! it: a redirect that keeps the query (`Location: …?key=…`) would otherwise hand the
//! guest the value. A *body* that echoes the request still reaches the guest; what the
//! guest returns, logs or prints is scrubbed on the way out (`crate::secrets`).
//!
//! Redirects are not followed here: the guest sees the 3xx and sends the next hop as a
//! new request, which passes the same checks (and gets a secret only if that hop is
//! bound to one: a `Location` whose query was scrubbed to `key=[REDACTED]` gets the
//! real value put back on the way out). Connect, first-byte and between-bytes
//! timeouts and a response-body cap come from the policy, and no request outlives the
//! call's deadline.
//!
//! We write the sender instead of using wasmtime-wasi-http's `default_send_request`
//! because that one resolves and connects by name in one step, leaving no point at
//! which to vet the address.

use crate::call::CancelToken;
use crate::policy::HttpLimits;
use crate::policy::inject::{InjectInto, RequestPath, SecretInjection};
use crate::policy::network::{Destination, HostPattern, Scheme};
use crate::secrets::Scrubber;
use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpHooks};

/// The wasi:http state of one call of a tool that declares network destinations.
pub struct HttpState {
    /// wasmtime-wasi-http's own context (field size limits).
    pub ctx: WasiHttpCtx,
    /// Our hooks: the request filter and sender.
    pub hooks: Egress,
}

impl HttpState {
    /// State for a call that may reach `grants`, with `limits`, until `deadline` or
    /// until `cancel` is cancelled.
    pub fn new(
        tool: Arc<str>,
        grants: Vec<Destination>,
        limits: HttpLimits,
        deadline: Instant,
        cancel: Option<CancelToken>,
    ) -> Self {
        Self {
            ctx: WasiHttpCtx::new(),
            hooks: Egress {
                tool,
                grants: grants.into(),
                limits,
                deadline,
                cancel,
                inject: Vec::new(),
                scrub: None,
            },
        }
    }

    /// This state with secrets to add to matching requests: each binding and the
    /// value it sends (already formatted), and what the response to a request that got
    /// one is scrubbed of before the guest sees it (`None`: nothing is added).
    pub(crate) fn with_injections(
        mut self,
        inject: Vec<(SecretInjection, String)>,
        scrub: Option<Scrubber>,
    ) -> Self {
        if scrub.is_some() {
            self.hooks.inject = inject;
        } else if !inject.is_empty() {
            // Never add a secret whose echo could not be scrubbed (fail closed).
            tracing::error!(
                target: "hermetic::egress",
                tool = &*self.hooks.tool,
                "secret bindings ignored: no scrubber for them"
            );
        }
        self.hooks.scrub = scrub;
        self
    }

    /// State that refuses every request (a tool linked with wasi:http whose call was
    /// granted no destination).
    pub fn deny_all(tool: Arc<str>) -> Self {
        Self::new(
            tool,
            Vec::new(),
            HttpLimits::default(),
            Instant::now(),
            None,
        )
    }
}

/// The request filter and sender for one call.
pub struct Egress {
    tool: Arc<str>,
    grants: Arc<[Destination]>,
    limits: HttpLimits,
    deadline: Instant,
    cancel: Option<CancelToken>,
    /// Secret bindings and their formatted values (empty on the common path).
    inject: Vec<(SecretInjection, String)>,
    /// What the response to a request that got a secret is scrubbed of.
    scrub: Option<Scrubber>,
}

/// How often a request waiting on the network looks at its call's cancel token. A guest
/// blocked in a host call is out of reach of epoch interruption, so the request itself
/// has to notice.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// Resolves once `token` is cancelled; never without a token.
async fn cancelled(token: Option<CancelToken>) {
    match token {
        Some(token) => {
            while !token.is_cancelled() {
                tokio::time::sleep(CANCEL_POLL).await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Where a vetted request goes.
struct Target {
    scheme: Scheme,
    host: String,
    port: u16,
    /// The host as an IP literal, when it is one.
    literal: Option<IpAddr>,
    /// Whether the matching grant names the IP address itself (the only way to reach
    /// a non-public address).
    named_ip: bool,
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for Egress {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        let mut target = self.vet(request.uri());
        let mut request = request;
        // The scrubber, when this request got a secret: its response is scrubbed.
        let mut scrub = None;
        if let Ok(t) = &target
            && !self.inject.is_empty()
        {
            match self.add_secrets(&mut request, t) {
                Ok(true) => scrub = self.scrub.clone(),
                Ok(false) => {}
                Err(refused) => target = Err(refused),
            }
        }
        let timeouts = Timeouts::new(&self.limits, options, self.deadline);
        let max_body = self.limits.max_response_bytes;
        let tool = self.tool.clone();
        let cancel = self.cancel.clone();
        Box::new(async move {
            let target = target?;
            let deadline = tokio::time::Instant::from_std(timeouts.deadline);
            let sent = Sent {
                timeouts,
                max_body,
                cancel: cancel.clone(),
                scrub,
            };
            let send = tokio::time::timeout_at(deadline, send(&tool, target, request, sent));
            tokio::select! {
                result = send => result.unwrap_or(Err(Error::HttpResponseTimeout)),
                () = cancelled(cancel) => Err(Error::ConnectionTerminated),
            }
        })
    }
}

impl Egress {
    /// Adds the secrets bound to this request's destination and path, replacing a
    /// header or query parameter of the same name the guest set; whether it added any.
    /// A value that cannot be sent as one (a header value with control characters) is
    /// left out, logged.
    ///
    /// # Errors
    /// The refusal the guest gets when the destination has a binding and the request
    /// is a `TRACE`, `TRACK` or `CONNECT`, or its path does not parse as a
    /// [`RequestPath`] (nothing is added, nothing sent).
    fn add_secrets(
        &self,
        request: &mut http::Request<WasiBody>,
        target: &Target,
    ) -> Result<bool, Error> {
        let bound = |b: &SecretInjection| b.binds(target.scheme, &target.host, target.port);
        let Some((first, _)) = self.inject.iter().find(|(b, _)| bound(b)) else {
            return Ok(false);
        };
        let method = request.method().as_str();
        // Any case: a server may read an extension method's name case-insensitively.
        if ECHOING_METHODS
            .iter()
            .any(|m| method.eq_ignore_ascii_case(m))
        {
            tracing::warn!(
                target: "hermetic::egress",
                tool = &*self.tool,
                "refused {method} to {}: a secret is bound to that host",
                first.destination
            );
            return Err(Error::InternalError(Some(format!(
                "the host refused the method {method}: a secret is bound to {} and a server answers {method} with the request itself, the secret with it; use GET, POST or another method",
                first.destination
            ))));
        }
        let path = request.uri().path().to_owned();
        let routed = match RequestPath::parse(&path) {
            Ok(routed) => routed,
            Err(why) => {
                tracing::warn!(
                    target: "hermetic::egress",
                    tool = &*self.tool,
                    "refused {path:?} on {}: {why}, and a secret is bound to that host",
                    first.destination
                );
                return Err(Error::InternalError(Some(format!(
                    "the host refused the path {path:?}: {why}; a secret is bound to {} and a server may route such a path outside the secret's prefix: send the path without it",
                    first.destination
                ))));
            }
        };
        let mut added = false;
        for (binding, value) in &self.inject {
            if !binding.matches(target.scheme, &target.host, target.port, &routed) {
                continue;
            }
            match &binding.into {
                InjectInto::Header(name) => {
                    let header = http::HeaderName::from_bytes(name.as_bytes());
                    let value = http::HeaderValue::from_str(value);
                    match (header, value) {
                        (Ok(h), Ok(mut v)) => {
                            v.set_sensitive(true);
                            request.headers_mut().insert(h, v);
                            added = true;
                        }
                        _ => tracing::warn!(
                            target: "hermetic::egress",
                            tool = &*self.tool,
                            "secret {} not added: not a valid header value",
                            binding.secret
                        ),
                    }
                }
                InjectInto::Query(name) => {
                    let uri = request.uri();
                    let kept: Vec<&str> = uri
                        .query()
                        .unwrap_or_default()
                        .split('&')
                        .filter(|p| !p.is_empty() && p.split('=').next() != Some(name.as_str()))
                        .collect();
                    let mut query = kept.join("&");
                    if !query.is_empty() {
                        query.push('&');
                    }
                    query.push_str(name);
                    query.push('=');
                    query.push_str(&crate::policy::network::percent_encode(value));
                    let mut parts = uri.clone().into_parts();
                    let path_and_query = format!("{path}?{query}");
                    parts.path_and_query = path_and_query.parse().ok();
                    if let Ok(new) = http::Uri::from_parts(parts) {
                        *request.uri_mut() = new;
                        added = true;
                    }
                }
            }
        }
        Ok(added)
    }

    /// Matches the request URI against the grants.
    fn vet(&self, uri: &http::Uri) -> Result<Target, Error> {
        let scheme = match uri.scheme_str() {
            Some("http") => Scheme::Http,
            Some("https") => Scheme::Https,
            _ => return Err(Error::HttpProtocolError),
        };
        let host = uri
            .host()
            .ok_or(Error::HttpRequestUriInvalid)?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(scheme.default_port());
        let Some(grant) = self.grants.iter().find(|g| g.allows(scheme, &host, port)) else {
            tracing::warn!(
                target: "hermetic::egress",
                tool = &*self.tool,
                "refused {}://{host}:{port}: no grant covers it",
                uri.scheme_str().unwrap_or("")
            );
            return Err(Error::HttpRequestDenied);
        };
        Ok(Target {
            scheme,
            literal: host.parse().ok(),
            named_ip: matches!(grant.host, HostPattern::Ip(_)),
            host,
            port,
        })
    }
}

/// Methods refused to a host with a secret binding: `TRACE` (and IIS's `TRACK`) are
/// answered with the request as the body, headers and all; `CONNECT` makes the server
/// a tunnel whose traffic the host no longer reads.
const ECHOING_METHODS: [&str; 3] = ["TRACE", "TRACK", "CONNECT"];

/// What one request's sending needs besides its target.
struct Sent {
    timeouts: Timeouts,
    max_body: u64,
    cancel: Option<CancelToken>,
    /// Set when the request got a secret: the response's headers and trailers are
    /// scrubbed of it.
    scrub: Option<Scrubber>,
}

/// `headers` scrubbed by `scrub`: every value (a value that is not UTF-8 is scrubbed
/// in its lossy form, which keeps every valid sequence, so a secret in it is still
/// found); a header whose *name* holds a secret is dropped (no name can say
/// `[REDACTED]`).
fn scrub_headers(headers: &mut http::HeaderMap, scrub: &Scrubber) {
    let mut kept = http::HeaderMap::with_capacity(headers.len());
    let mut changed = false;
    for (name, value) in headers.iter() {
        if scrub.finds(name.as_str()) {
            changed = true;
            continue;
        }
        let text = String::from_utf8_lossy(value.as_bytes());
        let value = match scrub.scrub(&text) {
            std::borrow::Cow::Borrowed(_) => value.clone(),
            std::borrow::Cow::Owned(clean) => {
                changed = true;
                // Scrubbing only replaces text with `[REDACTED]`: still a valid value
                // (it had no control characters before); should it not be, the
                // header goes.
                match http::HeaderValue::from_str(&clean) {
                    Ok(v) => v,
                    Err(_) => continue,
                }
            }
        };
        kept.append(name.clone(), value);
    }
    if changed {
        *headers = kept;
    }
}

/// The time budgets of one request.
#[derive(Clone, Copy)]
struct Timeouts {
    connect: Duration,
    first_byte: Duration,
    between_bytes: Duration,
    deadline: Instant,
}

impl Timeouts {
    /// The policy's limits, shortened (never lengthened) by the guest's options.
    fn new(limits: &HttpLimits, options: Option<RequestOptions>, deadline: Instant) -> Self {
        let pick = |policy_ms: u64, guest: Option<Duration>| {
            let policy = Duration::from_millis(policy_ms);
            guest.map_or(policy, |g| g.min(policy))
        };
        let o = options.unwrap_or_default();
        Self {
            connect: pick(limits.connect_timeout_ms, o.connect_timeout),
            first_byte: pick(limits.first_byte_timeout_ms, o.first_byte_timeout),
            between_bytes: pick(limits.between_bytes_timeout_ms, o.between_bytes_timeout)
                .max(Duration::from_millis(1)),
            deadline,
        }
    }
}

async fn send(
    tool: &str,
    target: Target,
    mut request: http::Request<WasiBody>,
    sent: Sent,
) -> Result<
    (
        http::Response<WasiBody>,
        Box<dyn Future<Output = Result<(), Error>> + Send>,
    ),
    Error,
> {
    let Sent {
        timeouts,
        max_body,
        cancel,
        scrub,
    } = sent;
    let connect_by = tokio::time::Instant::now() + timeouts.connect;
    let addrs = resolve(&target, connect_by).await?;
    let allowed: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| target.named_ip || is_public(a.ip()))
        .collect();
    if allowed.is_empty() {
        tracing::warn!(
            target: "hermetic::egress",
            tool,
            "refused {}: it resolves to non-public addresses {addrs:?} and no grant names them",
            target.host
        );
        return Err(Error::DestinationIpProhibited);
    }
    let tcp = connect(&allowed, connect_by).await?;
    let _ = tcp.set_nodelay(true);
    let io: Box<dyn Stream> = match target.scheme {
        Scheme::Http => Box::new(tcp),
        Scheme::Https => {
            let name = match target.literal {
                Some(ip) => rustls::pki_types::ServerName::IpAddress(ip.into()),
                None => rustls::pki_types::ServerName::try_from(target.host.clone())
                    .map_err(|_| Error::HttpRequestUriInvalid)?,
            };
            let tls = tokio::time::timeout_at(connect_by, tls_connector()?.connect(name, tcp))
                .await
                .map_err(|_| Error::ConnectionTimeout)?
                .map_err(Error::Tls)?;
            Box::new(tls)
        }
    };
    let (mut sender, conn) = tokio::time::timeout_at(
        connect_by,
        hyper::client::conn::http1::handshake(TokioIo::new(io)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;
    // The connection is driven by its own task, which never outlives the call by more
    // than a second (the grace lets the request's own deadline report the timeout
    // instead of a dropped connection).
    let deadline = tokio::time::Instant::from_std(timeouts.deadline);
    tokio::spawn(async move {
        let _ = tokio::time::timeout_at(deadline + Duration::from_secs(1), conn).await;
    });

    // Origin-form request line: scheme and authority travel in the Host header only.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;

    let mut response = tokio::time::timeout(timeouts.first_byte, sender.send_request(request))
        .await
        .map_err(|_| Error::ConnectionReadTimeout)??;
    if let Some(scrub) = &scrub {
        scrub_headers(response.headers_mut(), scrub);
    }
    if let Some(length) = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && length > max_body
    {
        return Err(Error::HttpResponseBodySize(Some(length)));
    }
    let response = response.map(|incoming| {
        CappedBody {
            inner: incoming,
            remaining: max_body,
            max: max_body,
            between_bytes: timeouts.between_bytes,
            idle: Box::pin(tokio::time::sleep(timeouts.between_bytes)),
            total: Box::pin(tokio::time::sleep_until(deadline)),
            cancel: cancel.map(|token| (token, Box::pin(tokio::time::interval(CANCEL_POLL)))),
            scrub,
        }
        .boxed_unsync()
    });
    Ok((response, Box::new(async { Ok(()) })))
}

/// The target's addresses: the literal itself, or what the name resolves to.
async fn resolve(target: &Target, by: tokio::time::Instant) -> Result<Vec<SocketAddr>, Error> {
    if let Some(ip) = target.literal {
        return Ok(vec![SocketAddr::new(ip, target.port)]);
    }
    let found = tokio::time::timeout_at(
        by,
        tokio::net::lookup_host((target.host.as_str(), target.port)),
    )
    .await
    .map_err(|_| Error::DnsTimeout)?
    .map_err(|e| Error::DnsError {
        rcode: Some(e.to_string()),
        info_code: None,
    })?;
    Ok(found.collect())
}

/// Connects to the first address that answers.
async fn connect(addrs: &[SocketAddr], by: tokio::time::Instant) -> Result<TcpStream, Error> {
    let mut last = Error::ConnectionRefused;
    for addr in addrs {
        match tokio::time::timeout_at(by, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Error::Connect(e),
            Err(_) => return Err(Error::ConnectionTimeout),
        }
    }
    Err(last)
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// One TLS configuration for the process (Mozilla's roots via webpki-roots), built on
/// first use: building it per request would parse the root store every time. `None`
/// if rustls refuses the configuration, and then every HTTPS request fails.
fn tls_connector() -> Result<tokio_rustls::TlsConnector, Error> {
    static CONFIG: OnceLock<Option<Arc<rustls::ClientConfig>>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
                .ok()
        })
        .clone()
        .map(tokio_rustls::TlsConnector::from)
        .ok_or(Error::TlsProtocolError)
}

/// A response body that fails once it passes `max` bytes, goes quiet for longer than
/// `between_bytes`, reaches the call's deadline, or its call is cancelled.
struct CappedBody {
    inner: hyper::body::Incoming,
    remaining: u64,
    max: u64,
    between_bytes: Duration,
    idle: Pin<Box<tokio::time::Sleep>>,
    total: Pin<Box<tokio::time::Sleep>>,
    cancel: Option<(CancelToken, Pin<Box<tokio::time::Interval>>)>,
    /// Set when the request got a secret: trailers are scrubbed like headers.
    scrub: Option<Scrubber>,
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
                    if len > this.remaining {
                        return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(this.max)))));
                    }
                    this.remaining -= len;
                }
                let next = tokio::time::Instant::now() + this.between_bytes;
                this.idle.as_mut().reset(next);
                let frame = match (&this.scrub, frame.into_trailers()) {
                    (Some(scrub), Ok(mut trailers)) => {
                        scrub_headers(&mut trailers, scrub);
                        Frame::trailers(trailers)
                    }
                    (_, Ok(trailers)) => Frame::trailers(trailers),
                    (_, Err(frame)) => frame,
                };
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                if this.total.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Error::HttpResponseTimeout)));
                }
                if this.idle.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Error::ConnectionReadTimeout)));
                }
                if let Some((token, tick)) = &mut this.cancel {
                    // Each ready tick re-arms the timer; the loop leaves it pending.
                    while tick.as_mut().poll_tick(cx).is_ready() {
                        if token.is_cancelled() {
                            return Poll::Ready(Some(Err(Error::ConnectionTerminated)));
                        }
                    }
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

pub use hermetic_policy::network::is_public;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
            "3fff::1",
            "3fff:fff:ffff::1",
            "100::1",
            // NAT64 local use: the site's own translator decides where it leads.
            "64:ff9b:1::a9fe:a9fe",
            "64:ff9b:1:ffff::808:808",
            // Teredo (its server and client addresses are obfuscated IPv4 inside).
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            // Benchmarking, ORCHID, ORCHIDv2, the rest of 2001::/23.
            "2001:2::1",
            "2001:10::1",
            "2001:1f:ffff::1",
            "2001:20::1",
            "2001:2f::1",
            "2001:1ff:ffff::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} must not be public");
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            // Just past 2001::/23 and the documentation blocks: ordinary addresses.
            "2001:200::1",
            "2001:4860:4860::8888",
            "2001:db9::1",
            "3ffe:ffff::1",
            "3fff:1000::1",
            "4000::1",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
    }

    fn egress(grants: &[&str]) -> Egress {
        HttpState::new(
            "t".into(),
            grants
                .iter()
                .map(|g| Destination::parse(g).unwrap())
                .collect(),
            HttpLimits::default(),
            Instant::now() + Duration::from_secs(5),
            None,
        )
        .hooks
    }

    #[test]
    fn the_uri_decides_and_only_an_ip_grant_names_an_ip() {
        let e = egress(&[
            "https://api.example.com",
            "http://127.0.0.1:8080",
            "https://*",
        ]);
        let vet = |u: &str| e.vet(&u.parse().unwrap());
        assert!(vet("https://api.example.com/x").is_ok());
        assert!(matches!(
            vet("http://api.example.com/x"),
            Err(Error::HttpRequestDenied)
        ));
        assert!(matches!(
            vet("http://127.0.0.1:8081/"),
            Err(Error::HttpRequestDenied)
        ));
        let t = vet("http://127.0.0.1:8080/").unwrap();
        assert!(t.named_ip && t.literal.is_some());
        // `https://*` matches 10.0.0.1, but does not *name* it: still non-public only.
        let t = vet("https://10.0.0.1/").unwrap();
        assert!(!t.named_ip);
        assert!(matches!(
            vet("ftp://api.example.com/"),
            Err(Error::HttpProtocolError)
        ));
        assert!(matches!(
            egress(&[]).vet(&"https://a.example.com/".parse().unwrap()),
            Err(Error::HttpRequestDenied)
        ));
    }

    #[test]
    fn guest_options_can_only_shorten_the_policy_timeouts() {
        let limits = HttpLimits::default();
        let t = Timeouts::new(
            &limits,
            Some(RequestOptions {
                connect_timeout: Some(Duration::from_secs(3600)),
                first_byte_timeout: Some(Duration::from_millis(5)),
                between_bytes_timeout: None,
            }),
            Instant::now(),
        );
        assert_eq!(t.connect, Duration::from_millis(limits.connect_timeout_ms));
        assert_eq!(t.first_byte, Duration::from_millis(5));
        assert_eq!(
            t.between_bytes,
            Duration::from_millis(limits.between_bytes_timeout_ms)
        );
    }
}
