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
//! - every host but the registry itself (a redirect's target, a token server) must
//!   resolve to public addresses only — checked before the request for a clear error,
//!   and again by the connection's own resolver, so a DNS answer that changes in
//!   between (rebinding) is refused too. The registry the operator named may be
//!   anywhere (an enterprise registry on 10.x is legitimate).

use crate::artifact::{MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES};
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
}

/// Registry credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name.
    pub username: String,
    /// Password or token.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, <password>)", self.username)
    }
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
/// the registry's.
#[derive(Debug)]
struct PublicUnlessRegistry {
    registry: String,
}

impl Resolver for PublicUnlessRegistry {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = DefaultResolver::default().resolve(uri, config, timeout)?;
        if authority(uri).as_deref() == Some(self.registry.as_str()) {
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

/// One registry.
#[derive(Debug)]
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
        })
    }

    fn unreachable(&self, reason: impl std::fmt::Display) -> RegistryError {
        RegistryError::Unreachable {
            registry: self.registry.clone(),
            reason: reason.to_string(),
        }
    }

    /// Whether `uri` may be requested, and whether it is the registry itself.
    fn vet(&self, uri: &Uri) -> Result<bool, RegistryError> {
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
        let own = authority(uri).as_deref() == Some(self.registry_authority.as_str());
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if own && self.insecure => {}
            _ => return Err(refused("not https")),
        }
        if own {
            return Ok(true);
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
                "it is (or resolves to) the private address {ip}; only the registry itself may be private"
            )));
        }
        Ok(false)
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
            let own = self.vet(&uri)?;
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
                        if self.credentials.is_some() {
                            "the credentials were refused"
                        } else {
                            "log in first (`docker login` / `podman login`, or HERMETIC_REGISTRY_USERNAME and HERMETIC_REGISTRY_PASSWORD)"
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
            ureq::Error::HostNotFound if self.vet(uri).is_ok_and(|own| !own) => {
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

    /// Answers a `WWW-Authenticate` challenge (Basic, or Bearer with a token request).
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
                    auth_error(
                        "the registry needs credentials: log in (`docker login` / `podman login`) or set HERMETIC_REGISTRY_USERNAME and HERMETIC_REGISTRY_PASSWORD".into(),
                    )
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
                self.vet(&uri)?;
                let mut request = self.agent.get(&url);
                if let Some(b) = &basic {
                    request = request.header("Authorization", b);
                }
                let mut response = request.call().map_err(|e| self.transport_error(&uri, e))?;
                if !response.status().is_success() {
                    return Err(auth_error(format!(
                        "the token server answered {}{}",
                        response.status().as_u16(),
                        if basic.is_none() {
                            " (log in first?)"
                        } else {
                            ""
                        }
                    )));
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
            Some(true)
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
            Some(false)
        );
    }
}
