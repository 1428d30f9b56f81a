//! A client of the OCI distribution API, just the part tools need: check the registry,
//! push blobs and manifests, resolve a tag, fetch a manifest and a blob.
//!
//! Why our own and not `oci-client`: a registry is untrusted input, and `oci-client`
//! (0.18) reads manifests and error bodies without a size cap, follows redirects to any
//! address (a blob GET redirected to `169.254.169.254` or `127.0.0.1` is followed),
//! fetches a descriptor's external `urls` from any host, and would add reqwest and ~30
//! crates. Here, on `ureq` (already in the tree):
//! - every body is read with a cap; a blob streams into the store, hashed and counted;
//! - redirects are followed by hand (at most [`MAX_REDIRECTS`]): to https only (plain
//!   http only back to a loopback registry the operator called insecure), and the
//!   `Authorization` header never leaves the registry's own host;
//! - credentials go to the registry itself (its `host:port`) and, for a Bearer
//!   challenge, to a token server only when it is the registry or one the operator
//!   named for these credentials ([`Credentials::token_hosts`]); any other realm gets
//!   an anonymous token request;
//! - every host but the registry and its named token servers (a redirect's target,
//!   another token server) must resolve to public addresses only — checked before the
//!   request for a clear error, and again by the connection's own resolver, so a DNS
//!   answer that changes in between (rebinding) is refused too. The hosts the operator
//!   named may be anywhere (an enterprise registry on 10.x is legitimate).

use crate::artifact::{MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES};
use crate::auth::Credentials;
use crate::digest::Digest;
use crate::store::{Store, StoreError};
use base64::Engine as _;
use parking_lot::Mutex;
use std::net::{IpAddr, ToSocketAddrs};
use std::time::Duration;
use ureq::http::{StatusCode, Uri};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// Most redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;
/// Largest error or token body read.
const MAX_SMALL_BODY: u64 = 64 * 1024;

/// A registry error, in words an operator can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No connection, a timeout, a TLS failure.
    #[error("registry {registry}: {reason}")]
    Unreachable {
        /// `host:port`.
        registry: String,
        /// What failed.
        reason: String,
    },
    /// Plain HTTP asked for a registry that is not on this machine.
    #[error(
        "--insecure (plain HTTP) is only for a registry on this machine (localhost, 127.0.0.1, ::1), not {0}"
    )]
    InsecureRemote(String),
    /// A redirect or token server that is refused.
    #[error("registry {registry}: refused to follow {url}: {reason}")]
    Refused {
        /// `host:port`.
        registry: String,
        /// Where it pointed (query cut).
        url: String,
        /// Why.
        reason: String,
    },
    /// Authentication failed or is needed.
    #[error("registry {registry}: {reason}")]
    Auth {
        /// `host:port`.
        registry: String,
        /// What to do.
        reason: String,
    },
    /// Nothing at this reference.
    #[error("{0}: not found in the registry")]
    NotFound(String),
    /// Any other answer.
    #[error("registry {registry}: {what} answered {status}: {body}")]
    Status {
        /// `host:port`.
        registry: String,
        /// The request.
        what: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// A body over its cap, or a blob that is not what its descriptor says.
    #[error("registry {registry}: {what}")]
    Content {
        /// `host:port`.
        registry: String,
        /// What was wrong.
        what: String,
    },
    /// The store refused the content.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A registry setting in the environment that cannot be used.
    #[error(transparent)]
    Setting(#[from] crate::auth::BadSetting),
}

/// How to talk to a registry.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Plain HTTP (a loopback registry only).
    pub insecure: bool,
    /// Credentials, if any.
    pub credentials: Option<Credentials>,
    /// Time one request may take, whole.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            insecure: false,
            credentials: None,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Resolves like ureq's own resolver, keeping only public addresses for every host but
/// the registry's and its named token servers'.
#[derive(Debug)]
struct PublicUnlessRegistry {
    registry: String,
    token_hosts: Vec<String>,
}

impl Resolver for PublicUnlessRegistry {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = DefaultResolver::default().resolve(uri, config, timeout)?;
        if destination(uri, &self.registry, &self.token_hosts) != Destination::Elsewhere {
            return Ok(addrs);
        }
        let mut public = self.empty();
        for addr in addrs
            .iter()
            .filter(|a| hermetic_policy::network::is_public(a.ip()))
        {
            public.push(*addr);
        }
        if public.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(public)
    }
}

/// `host:port` of a URI (the port made explicit).
fn authority(uri: &Uri) -> Option<String> {
    let a = uri.authority()?;
    let port = a.port_u16().or_else(|| match uri.scheme_str() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    })?;
    Some(format!("{}:{port}", a.host()))
}

/// Who a URI reaches, for what it may receive and where it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// The registry itself (`host:port` as the operator named it).
    Registry,
    /// A token server the operator named for the registry's credentials.
    TokenHost,
    /// Anything else: public addresses over https only, no credentials.
    Elsewhere,
}

/// Where `uri` goes, given the registry's `host:port` and the named token servers
/// (`host[:port]`, lowercased; without a port, the URI scheme's default).
fn destination(uri: &Uri, registry_authority: &str, token_hosts: &[String]) -> Destination {
    let Some(to) = authority(uri) else {
        return Destination::Elsewhere;
    };
    let to = to.to_ascii_lowercase();
    if to == registry_authority.to_ascii_lowercase() {
        return Destination::Registry;
    }
    let named = token_hosts.iter().any(|host| {
        let host = host.to_ascii_lowercase();
        let has_port = host
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if has_port {
            host == to
        } else {
            format!("{host}:{}", default_port(uri)) == to
        }
    });
    if named {
        Destination::TokenHost
    } else {
        Destination::Elsewhere
    }
}

/// The `Authorization` a token request to `to` carries: the registry's credentials
/// (`basic`) for the registry itself and a token server the operator named, nothing
/// for any other host — a registry names its token server in its challenge, so a
/// hostile or compromised registry would otherwise send the credentials anywhere.
fn token_request_auth(to: Destination, basic: Option<String>) -> Option<String> {
    match to {
        Destination::Registry | Destination::TokenHost => basic,
        Destination::Elsewhere => None,
    }
}

/// The URI scheme's default port (80 for http, else 443).
fn default_port(uri: &Uri) -> u16 {
    if uri.scheme_str() == Some("http") {
        80
    } else {
        443
    }
}

/// Whether `uri`'s host is this machine (`localhost`, 127.0.0.0/8, `::1`).
fn is_loopback(uri: &Uri) -> bool {
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// One registry.
pub struct RegistryClient {
    agent: ureq::Agent,
    /// `host[:port]` as written in references.
    registry: String,
    /// `host:port`, the port explicit (compared with URIs).
    registry_authority: String,
    base: String,
    insecure: bool,
    credentials: Option<Credentials>,
    /// The `Authorization` value that worked last (Basic, or a Bearer token).
    auth: Mutex<Option<String>>,
    /// A token server that asked and was not given the credentials (for the hint when
    /// the registry then refuses).
    withheld: Mutex<Option<String>>,
}

/// Written by hand: the `Authorization` value that worked (a password in Basic form,
/// or a Bearer token) never reaches a log; the credentials redact themselves.
impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient")
            .field("registry", &self.registry)
            .field("base", &self.base)
            .field("insecure", &self.insecure)
            .field("credentials", &self.credentials)
            .field(
                "auth",
                &self.auth.lock().as_deref().map(|a| {
                    let scheme = a.split_once(' ').map_or("?", |(scheme, _)| scheme);
                    format!("{scheme} <redacted>")
                }),
            )
            .field("withheld", &*self.withheld.lock())
            .finish_non_exhaustive()
    }
}

/// A response whose status was not an error.
struct Answer {
    response: ureq::http::Response<ureq::Body>,
}

impl RegistryClient {
    /// A client of `registry` (`host[:port]`).
    ///
    /// # Errors
    /// [`RegistryError::InsecureRemote`] for plain HTTP to another machine.
    pub fn new(registry: &str, options: ClientOptions) -> Result<Self, RegistryError> {
        let probe = crate::Reference {
            registry: registry.to_owned(),
            repository: "x".into(),
            tag: Some("x".into()),
            digest: None,
        };
        if options.insecure && !probe.is_loopback() {
            return Err(RegistryError::InsecureRemote(registry.to_owned()));
        }
        let scheme = if options.insecure { "http" } else { "https" };
        let base = format!("{scheme}://{registry}");
        let registry_authority = base
            .parse::<Uri>()
            .ok()
            .as_ref()
            .and_then(authority)
            .ok_or_else(|| RegistryError::Unreachable {
                registry: registry.to_owned(),
                reason: "not a host[:port]".into(),
            })?;
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            // The operator's proxy variables are for the operator's traffic; a registry
            // pull goes direct, so the address checks are the ones that hold.
            .proxy(None)
            .user_agent(concat!("hermetic/", env!("CARGO_PKG_VERSION")))
            .build();
        let agent = ureq::Agent::with_parts(
            config,
            DefaultConnector::default(),
            PublicUnlessRegistry {
                registry: registry_authority.clone(),
                token_hosts: options
                    .credentials
                    .as_ref()
                    .map(|c| c.token_hosts.clone())
                    .unwrap_or_default(),
            },
        );
        Ok(Self {
            agent,
            registry: registry.to_owned(),
            registry_authority,
            base,
            insecure: options.insecure,
            credentials: options.credentials,
            auth: Mutex::new(None),
            withheld: Mutex::new(None),
        })
    }

    fn unreachable(&self, reason: impl std::fmt::Display) -> RegistryError {
        RegistryError::Unreachable {
            registry: self.registry.clone(),
            reason: reason.to_string(),
        }
    }

    /// Whether `uri` may be requested, and who it reaches.
    fn vet(&self, uri: &Uri) -> Result<Destination, RegistryError> {
        let refused = |reason: &str| RegistryError::Refused {
            registry: self.registry.clone(),
            url: format!(
                "{}://{}{}",
                uri.scheme_str().unwrap_or("?"),
                uri.authority().map_or("?", |a| a.as_str()),
                uri.path()
            ),
            reason: reason.to_owned(),
        };
        let token_hosts = self
            .credentials
            .as_ref()
            .map_or(&[][..], |c| c.token_hosts.as_slice());
        let to = destination(uri, &self.registry_authority, token_hosts);
        match (uri.scheme_str(), to) {
            (Some("https"), _) => {}
            (Some("http"), Destination::Registry) if self.insecure => {}
            (Some("http"), Destination::TokenHost) if self.insecure && is_loopback(uri) => {}
            _ => return Err(refused("not https")),
        }
        if to != Destination::Elsewhere {
            return Ok(to);
        }
        let host = uri.host().ok_or_else(|| refused("no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => (host, 443)
                .to_socket_addrs()
                .map_err(|e| refused(&format!("cannot resolve: {e}")))?
                .map(|a| a.ip())
                .collect(),
        };
        if let Some(ip) = addrs
            .iter()
            .find(|ip| !hermetic_policy::network::is_public(**ip))
        {
            return Err(refused(&format!(
                "it is (or resolves to) the private address {ip}; only the registry itself (and a token server named for its credentials) may be private"
            )));
        }
        Ok(Destination::Elsewhere)
    }

    /// Sends one request, answering an auth challenge once and following redirects by
    /// hand. `body` is sent on every attempt (requests here are small or idempotent).
    fn send(
        &self,
        method: &str,
        url: String,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        what: &str,
    ) -> Result<Answer, RegistryError> {
        let mut url = url;
        let mut challenged = false;
        let mut hops = 0;
        loop {
            let uri: Uri = url
                .parse()
                .map_err(|e| self.unreachable(format!("bad URL {url}: {e}")))?;
            let own = self.vet(&uri)? == Destination::Registry;
            let mut request = ureq::http::Request::builder()
                .method(method)
                .uri(uri.clone());
            for (k, v) in headers {
                request = request.header(*k, *v);
            }
            if own && let Some(auth) = self.auth.lock().clone() {
                request = request.header("Authorization", auth);
            }
            let sent = match body {
                Some(b) => request
                    .body(b.to_vec())
                    .map_err(|e| self.unreachable(e))
                    .and_then(|r| self.agent.run(r).map_err(|e| self.transport_error(&uri, e))),
                None => request
                    .body(())
                    .map_err(|e| self.unreachable(e))
                    .and_then(|r| self.agent.run(r).map_err(|e| self.transport_error(&uri, e))),
            };
            let mut response = sent?;
            let status = response.status();
            if status == StatusCode::UNAUTHORIZED && own && !challenged {
                challenged = true;
                let challenge = header(&response, "www-authenticate").unwrap_or_default();
                self.authenticate(&challenge)?;
                continue;
            }
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                hops += 1;
                let location = header(&response, "location").unwrap_or_default();
                if hops > MAX_REDIRECTS || location.is_empty() {
                    return Err(RegistryError::Refused {
                        registry: self.registry.clone(),
                        url: location,
                        reason: format!(
                            "more than {MAX_REDIRECTS} redirects, or one without a Location"
                        ),
                    });
                }
                url = self.join(&uri, &location)?;
                continue;
            }
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                return Err(RegistryError::Auth {
                    registry: self.registry.clone(),
                    reason: format!(
                        "{what}: {} — {}",
                        status.as_u16(),
                        match (&self.credentials, self.withheld.lock().as_deref()) {
                            (None, _) => self.login_hint(),
                            (Some(_), Some(host)) => self.token_host_hint(host),
                            (Some(_), None) => "the credentials were refused".into(),
                        }
                    ),
                });
            }
            if !status.is_success() {
                let text = response
                    .body_mut()
                    .with_config()
                    .limit(MAX_SMALL_BODY)
                    .read_to_string()
                    .unwrap_or_default();
                return Err(RegistryError::Status {
                    registry: self.registry.clone(),
                    what: what.to_owned(),
                    status: status.as_u16(),
                    body: text.chars().filter(|c| !c.is_control()).take(300).collect(),
                });
            }
            return Ok(Answer { response });
        }
    }

    fn transport_error(&self, uri: &Uri, e: ureq::Error) -> RegistryError {
        match e {
            ureq::Error::HostNotFound
                if self.vet(uri).is_ok_and(|to| to == Destination::Elsewhere) =>
            {
                RegistryError::Refused {
                    registry: self.registry.clone(),
                    url: uri.to_string(),
                    reason: "it no longer resolves to a public address".into(),
                }
            }
            ureq::Error::Rustls(_) | ureq::Error::Io(_) if !self.insecure && e.to_string().contains("corrupt message") => {
                self.unreachable(format!(
                    "the TLS handshake failed ({e}): does it serve plain HTTP? (--insecure is for a registry on this machine only)"
                ))
            }
            e => self.unreachable(format!("{e} (is it running, and is the address right?)")),
        }
    }

    /// `location` against `from` (absolute, or absolute path on the same host).
    fn join(&self, from: &Uri, location: &str) -> Result<String, RegistryError> {
        if location.starts_with("https://") || location.starts_with("http://") {
            return Ok(location.to_owned());
        }
        if location.starts_with('/') && !location.starts_with("//") {
            return Ok(format!(
                "{}://{}{location}",
                from.scheme_str().unwrap_or("https"),
                from.authority().map_or("", |a| a.as_str())
            ));
        }
        Err(RegistryError::Refused {
            registry: self.registry.clone(),
            url: location.chars().take(200).collect(),
            reason: "a Location that is neither absolute nor an absolute path".into(),
        })
    }

    /// What to do when the registry wants credentials and none are configured for it.
    fn login_hint(&self) -> String {
        format!(
            "log in first: set {}=\"{r}=USER:PASSWORD\", or `docker login {r}` / `podman login {r}`",
            crate::auth::AUTH_VAR,
            r = self.registry
        )
    }

    /// What to do when a token server that is not the registry wanted the credentials.
    fn token_host_hint(&self, host: &str) -> String {
        format!(
            "the credentials for {r} were not sent to its token server {host}: they go only to {r} itself and to token servers named for it. If {host} is {r}'s own, name it: {}=\"{r}={host}\"",
            crate::auth::TOKEN_HOSTS_VAR,
            r = self.registry
        )
    }

    /// Answers a `WWW-Authenticate` challenge (Basic, or Bearer with a token request).
    /// The credentials go only to the registry and to the token servers named for them;
    /// another realm is asked for a token anonymously.
    fn authenticate(&self, challenge: &str) -> Result<(), RegistryError> {
        let auth_error = |reason: String| RegistryError::Auth {
            registry: self.registry.clone(),
            reason,
        };
        let basic = self.credentials.as_ref().map(|c| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD
                    .encode(format!("{}:{}", c.username, c.password))
            )
        });
        let (scheme, params) = parse_challenge(challenge);
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => {
                let basic = basic.ok_or_else(|| {
                    auth_error(format!(
                        "the registry needs credentials: {}",
                        self.login_hint()
                    ))
                })?;
                *self.auth.lock() = Some(basic);
                Ok(())
            }
            "bearer" => {
                let realm = params
                    .iter()
                    .find(|(k, _)| k == "realm")
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| auth_error("a Bearer challenge without a realm".into()))?;
                let query: Vec<String> = params
                    .iter()
                    .filter(|(k, _)| k == "service" || k == "scope")
                    .map(|(k, v)| format!("{k}={}", hermetic_policy::network::percent_encode(v)))
                    .collect();
                let sep = if realm.contains('?') { '&' } else { '?' };
                let url = if query.is_empty() {
                    realm
                } else {
                    format!("{realm}{sep}{}", query.join("&"))
                };
                let uri: Uri = url
                    .parse()
                    .map_err(|e| auth_error(format!("token server {url}: {e}")))?;
                let host = uri.authority().map_or("?", |a| a.as_str()).to_owned();
                let to = self.vet(&uri).map_err(|e| match e {
                    RegistryError::Refused {
                        registry,
                        url,
                        reason,
                    } if self.credentials.is_some() => RegistryError::Refused {
                        registry,
                        url,
                        reason: format!("{reason} ({})", self.token_host_hint(&host)),
                    },
                    e => e,
                })?;
                let offered = basic.is_some();
                let basic = token_request_auth(to, basic);
                if offered && basic.is_none() {
                    *self.withheld.lock() = Some(host.clone());
                }
                let mut request = self.agent.get(&url);
                if let Some(b) = &basic {
                    request = request.header("Authorization", b);
                }
                let mut response = request.call().map_err(|e| self.transport_error(&uri, e))?;
                if !response.status().is_success() {
                    let status = response.status().as_u16();
                    return Err(auth_error(match (&self.credentials, &basic) {
                        (None, _) => {
                            format!("the token server answered {status}: {}", self.login_hint())
                        }
                        (Some(_), None) => format!(
                            "the token server answered {status}: {}",
                            self.token_host_hint(&host)
                        ),
                        (Some(_), Some(_)) => format!(
                            "the token server answered {status}: the credentials were refused"
                        ),
                    }));
                }
                let body = response
                    .body_mut()
                    .with_config()
                    .limit(MAX_SMALL_BODY)
                    .read_to_vec()
                    .map_err(|e| auth_error(format!("token answer: {e}")))?;
                let v: serde_json::Value = serde_json::from_slice(&body)
                    .map_err(|e| auth_error(format!("token answer is not JSON: {e}")))?;
                let token = v
                    .get("token")
                    .or_else(|| v.get("access_token"))
                    .and_then(serde_json::Value::as_str)
                    .filter(|t| !t.is_empty() && t.len() < 16 * 1024 && !t.contains(['\r', '\n']))
                    .ok_or_else(|| auth_error("the token answer holds no token".into()))?;
                *self.auth.lock() = Some(format!("Bearer {token}"));
                Ok(())
            }
            _ => Err(auth_error(format!(
                "unsupported authentication {:?}",
                challenge.chars().take(80).collect::<String>()
            ))),
        }
    }

    /// Checks that the registry answers the distribution API (`GET /v2/`).
    ///
    /// # Errors
    /// [`RegistryError`] when it does not.
    pub fn ping(&self) -> Result<(), RegistryError> {
        self.send("GET", format!("{}/v2/", self.base), &[], None, "GET /v2/")
            .map(|_| ())
    }

    /// The manifest at `reference` (a tag or a digest): its bytes, checked against the
    /// digest asked for or the one the registry says, and capped.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], [`RegistryError::Content`] for a digest mismatch
    /// or an oversized manifest, or a transport error.
    pub fn manifest(
        &self,
        repository: &str,
        reference: &str,
    ) -> Result<(Vec<u8>, Digest), RegistryError> {
        let url = format!("{}/v2/{repository}/manifests/{reference}", self.base);
        let mut answer = match self.send(
            "GET",
            url,
            &[("Accept", MANIFEST_MEDIA_TYPE)],
            None,
            "the manifest",
        ) {
            Err(RegistryError::Status { status: 404, .. }) => {
                return Err(RegistryError::NotFound(format!(
                    "{}/{repository}:{reference}",
                    self.registry
                )));
            }
            other => other?,
        };
        let said = header(&answer.response, "docker-content-digest");
        let bytes = answer
            .response
            .body_mut()
            .with_config()
            .limit(MAX_MANIFEST_BYTES as u64)
            .read_to_vec()
            .map_err(|e| RegistryError::Content {
                registry: self.registry.clone(),
                what: format!("the manifest of {repository}:{reference}: {e} (at most {MAX_MANIFEST_BYTES} bytes)"),
            })?;
        let digest = Digest::of(&bytes);
        let expected = Digest::parse(reference)
            .ok()
            .or_else(|| said.and_then(|s| Digest::parse(&s).ok()));
        if let Some(expected) = expected
            && expected != digest
        {
            return Err(RegistryError::Content {
                registry: self.registry.clone(),
                what: format!(
                    "the manifest of {repository}:{reference} has digest {digest}, not {expected}: refused"
                ),
            });
        }
        Ok((bytes, digest))
    }

    /// Streams the blob `digest` of `size` bytes into `store` (nothing stored unless
    /// it is exactly that).
    ///
    /// # Errors
    /// [`RegistryError::Store`] for a mismatch, a transport error otherwise.
    pub fn blob_into(
        &self,
        store: &Store,
        repository: &str,
        digest: &Digest,
        size: u64,
    ) -> Result<std::path::PathBuf, RegistryError> {
        let path = store.put_with::<RegistryError>("the pulled blob", digest, size, |w| {
            let url = format!("{}/v2/{repository}/blobs/{digest}", self.base);
            let mut answer = self.send("GET", url, &[], None, "the blob")?;
            let mut reader = answer
                .response
                .body_mut()
                .with_config()
                .limit(size.saturating_add(1))
                .reader();
            std::io::copy(&mut reader, w).map_err(|e| RegistryError::Content {
                registry: self.registry.clone(),
                what: format!("blob {digest}: {e} (announced {size} bytes)"),
            })?;
            Ok(())
        })?;
        let stored = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if stored != size {
            let _ = std::fs::remove_file(&path);
            return Err(RegistryError::Content {
                registry: self.registry.clone(),
                what: format!("blob {digest} is {stored} bytes, its manifest says {size}"),
            });
        }
        Ok(path)
    }

    /// A small blob (at most `limit` bytes), checked against its digest.
    ///
    /// # Errors
    /// [`RegistryError::Content`] for a mismatch or an oversized blob.
    pub fn small_blob(
        &self,
        repository: &str,
        digest: &Digest,
        limit: u64,
    ) -> Result<Vec<u8>, RegistryError> {
        let url = format!("{}/v2/{repository}/blobs/{digest}", self.base);
        let mut answer = self.send("GET", url, &[], None, "the blob")?;
        let bytes = answer
            .response
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| RegistryError::Content {
                registry: self.registry.clone(),
                what: format!("blob {digest}: {e}"),
            })?;
        if &Digest::of(&bytes) != digest {
            return Err(RegistryError::Content {
                registry: self.registry.clone(),
                what: format!("blob {digest} does not have that digest: refused"),
            });
        }
        Ok(bytes)
    }

    /// Uploads `bytes` as a blob (skipped when the registry has it).
    ///
    /// # Errors
    /// A transport or status error.
    pub fn push_blob(&self, repository: &str, bytes: &[u8]) -> Result<Digest, RegistryError> {
        let digest = Digest::of(bytes);
        let head = self.send(
            "HEAD",
            format!("{}/v2/{repository}/blobs/{digest}", self.base),
            &[],
            None,
            "HEAD blob",
        );
        if head.is_ok() {
            return Ok(digest);
        }
        let answer = self.send(
            "POST",
            format!("{}/v2/{repository}/blobs/uploads/", self.base),
            &[("Content-Length", "0")],
            Some(&[]),
            "starting an upload",
        )?;
        let location =
            header(&answer.response, "location").ok_or_else(|| RegistryError::Content {
                registry: self.registry.clone(),
                what: "an upload without a Location".into(),
            })?;
        let from: Uri = self.base.parse().map_err(|e| self.unreachable(e))?;
        let upload = self.join(&from, &location)?;
        let sep = if upload.contains('?') { '&' } else { '?' };
        self.send(
            "PUT",
            format!(
                "{upload}{sep}digest={}",
                hermetic_policy::network::percent_encode(&digest.to_string())
            ),
            // Without this type, distribution reads the body as a form: an empty blob.
            &[("Content-Type", "application/octet-stream")],
            Some(bytes),
            "uploading a blob",
        )?;
        Ok(digest)
    }

    /// Puts a manifest at `reference` (a tag, or its digest).
    ///
    /// # Errors
    /// A transport or status error.
    pub fn push_manifest(
        &self,
        repository: &str,
        reference: &str,
        bytes: &[u8],
    ) -> Result<Digest, RegistryError> {
        self.send(
            "PUT",
            format!("{}/v2/{repository}/manifests/{reference}", self.base),
            &[("Content-Type", MANIFEST_MEDIA_TYPE)],
            Some(bytes),
            "putting the manifest",
        )?;
        Ok(Digest::of(bytes))
    }
}

fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// `Scheme k="v", k2="v2"` → scheme and parameters. Hand-written: the grammar is one
/// line of RFC 7235 and the crates for it pull in more than they save.
pub(crate) fn parse_challenge(s: &str) -> (String, Vec<(String, String)>) {
    let s = s.trim();
    let (scheme, rest) = s.split_once(' ').unwrap_or((s, ""));
    let mut params = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        params.push((key.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    (scheme.to_owned(), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse() {
        let (scheme, params) = parse_challenge(
            r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(scheme, "Bearer");
        assert_eq!(
            params,
            vec![
                ("realm".into(), "https://auth.example.com/token".into()),
                ("service".into(), "registry.example.com".into()),
                ("scope".into(), "repository:a/b:pull,push".into()),
            ]
        );
        assert_eq!(parse_challenge(r#"Basic realm="x""#).0, "Basic");
        // Garbage ends cleanly.
        let _ = parse_challenge("Bearer \"\"\"===,,,\\");
        assert_eq!(
            hermetic_policy::network::percent_encode("repository:a/b:pull,push"),
            "repository%3Aa%2Fb%3Apull%2Cpush"
        );
    }

    #[test]
    fn plain_http_is_for_this_machine_only() {
        let insecure = ClientOptions {
            insecure: true,
            ..ClientOptions::default()
        };
        assert!(RegistryClient::new("127.0.0.1:5000", insecure.clone()).is_ok());
        assert!(RegistryClient::new("localhost:5000", insecure.clone()).is_ok());
        assert!(matches!(
            RegistryClient::new("registry.example.com", insecure),
            Err(RegistryError::InsecureRemote(_))
        ));
    }

    #[test]
    fn only_the_registry_itself_may_be_private() {
        let c = RegistryClient::new("10.0.0.5:5000", ClientOptions::default()).unwrap();
        assert_eq!(
            c.vet(&"https://10.0.0.5:5000/v2/".parse().unwrap()).ok(),
            Some(Destination::Registry)
        );
        for url in [
            "https://169.254.169.254/latest",
            "https://127.0.0.1:5000/v2/",
            "https://[::1]/x",
            "https://10.0.0.6:5000/v2/",
            "http://93.184.215.14/x",
            "ftp://93.184.215.14/x",
        ] {
            assert!(c.vet(&url.parse().unwrap()).is_err(), "{url}");
        }
        assert_eq!(
            c.vet(&"https://93.184.215.14/x".parse().unwrap()).ok(),
            Some(Destination::Elsewhere)
        );
    }

    fn with_token_hosts(registry: &str, insecure: bool, hosts: &[&str]) -> RegistryClient {
        let options = ClientOptions {
            insecure,
            credentials: Some(Credentials {
                username: "u".into(),
                password: "p".into(),
                token_hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
            }),
            ..ClientOptions::default()
        };
        RegistryClient::new(registry, options).unwrap()
    }

    /// Who may receive the credentials: the registry's own `host:port` and the token
    /// servers named for them — not another port of the same host, not a look-alike
    /// name, not a public host the registry names.
    #[test]
    fn the_debug_form_shows_no_password_nor_token() {
        let c = with_token_hosts("reg.example.com", false, &[]);
        *c.auth.lock() = Some("Bearer s3cret-token".to_owned());
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("s3cret-token") && !shown.contains("\"p\""),
            "{shown}"
        );
        assert!(shown.contains("Bearer <redacted>"), "{shown}");
        *c.auth.lock() = Some(format!("Basic {}", "dTpw"));
        assert!(!format!("{c:?}").contains("dTpw"));
    }

    #[test]
    fn a_token_server_on_another_host_is_asked_without_the_credentials() {
        let basic = Some("Basic dGVzdGVyOnMzY3JldA==".to_owned());
        let c = with_token_hosts("reg.example.com", false, &["auth.example.com"]);
        for (url, sent) in [
            ("https://reg.example.com/token", true),
            ("https://auth.example.com/token", true),
            // The challenge's realm is the registry's to choose: a host the operator
            // did not name gets an anonymous request.
            ("https://93.184.215.14/token", false),
            ("https://93.184.215.14:8443/token", false),
            (
                "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/token",
                false,
            ),
        ] {
            let to = c.vet(&url.parse().unwrap()).unwrap();
            assert_eq!(
                token_request_auth(to, basic.clone()).is_some(),
                sent,
                "{url}: {to:?}"
            );
        }
        assert_eq!(token_request_auth(Destination::Registry, None), None);
    }

    #[test]
    fn credentials_go_to_the_registry_and_named_token_hosts_only() {
        let c = with_token_hosts(
            "reg.example.com",
            false,
            &["auth.example.com", "10.0.0.6:5001"],
        );
        let to = |url: &str| c.vet(&url.parse().unwrap()).ok();
        for (url, expected) in [
            ("https://reg.example.com/token", Some(Destination::Registry)),
            (
                "https://REG.example.com:443/token",
                Some(Destination::Registry),
            ),
            (
                "https://auth.example.com/token",
                Some(Destination::TokenHost),
            ),
            (
                "https://Auth.Example.com:443/t",
                Some(Destination::TokenHost),
            ),
            // A named token server may be private, like the registry.
            ("https://10.0.0.6:5001/token", Some(Destination::TokenHost)),
            // Public hosts the operator did not name: reachable, never given credentials.
            ("https://93.184.215.14/token", Some(Destination::Elsewhere)),
            // Another port is another server; a private one is refused outright.
            ("https://10.0.0.6:5002/token", None),
            // No plain HTTP to anything but loopback under --insecure.
            ("http://auth.example.com/token", None),
            ("http://reg.example.com/token", None),
        ] {
            assert_eq!(to(url), expected, "{url}");
        }
        // A port-less name means the scheme's default port only.
        assert_eq!(
            destination(
                &"https://auth.example.com:8443/t".parse().unwrap(),
                "reg.example.com:443",
                &["auth.example.com".into()]
            ),
            Destination::Elsewhere
        );
        // Plain HTTP to a named token server: only on loopback, only under --insecure.
        let local = with_token_hosts("127.0.0.1:5000", true, &["127.0.0.1:5001"]);
        assert_eq!(
            local
                .vet(&"http://127.0.0.1:5001/token".parse().unwrap())
                .ok(),
            Some(Destination::TokenHost)
        );
        assert!(
            local
                .vet(&"http://127.0.0.1:5002/token".parse().unwrap())
                .is_err()
        );
        let secure = with_token_hosts("127.0.0.1:5000", false, &["127.0.0.1:5001"]);
        assert!(
            secure
                .vet(&"http://127.0.0.1:5001/token".parse().unwrap())
                .is_err()
        );
        // Without credentials nothing is named.
        let anonymous = RegistryClient::new("reg.example.com", ClientOptions::default()).unwrap();
        assert!(
            anonymous
                .vet(&"https://10.0.0.6:5001/token".parse().unwrap())
                .is_err()
        );
    }
}
