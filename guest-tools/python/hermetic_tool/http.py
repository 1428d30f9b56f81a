"""Outbound HTTP through the host's `wasi:http` (tools that declare `network`).

    from hermetic_tool import http
    r = http.get("https://api.example.com/v1/x?q=" + http.encode_query_value(q))
    data = r.json()

The host sends a request only to destinations the tool declared *and* the operator
granted; anything else fails with `HttpError` (kind `denied` or `prohibited`) without a
connection. Redirects are followed here, hop by hop, so the host checks every hop.
`HttpError` is a `ToolError`: left unhandled, its message becomes the tool's error.
(Python's `socket`, `urllib.request` and `http.client` do not work: the host never
grants sockets.)
"""

import json as _json
from urllib.parse import quote as _quote

from . import ToolError

MAX_REDIRECTS = 5
DEFAULT_MAX_BYTES = 1 << 20
_READ_CHUNK = 64 * 1024
_DEFAULT_HEADERS = (
    ("user-agent", "hermetic-tool-python/0.1"),
    ("accept", "text/html,text/plain,application/json;q=0.9,*/*;q=0.5"),
)


class HttpError(ToolError):
    """A request that failed. `kind`: bad_url, denied, prohibited, timeout, too_large,
    redirects or other."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class Response:
    """A response, body read in full."""

    __slots__ = ("url", "status", "headers", "body")

    def __init__(self, url: str, status: int, headers: list, body: bytes):
        self.url = url
        self.status = status
        self.headers = headers  # [(lower-case name, value)], in order
        self.body = body

    def header(self, name: str):
        """The first value of a header (by name, any case), or None."""
        name = name.lower()
        return next((v for n, v in self.headers if n == name), None)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self):
        return _json.loads(self.body)

    def __repr__(self) -> str:
        return f"Response(status={self.status}, url={self.url!r}, {len(self.body)} bytes)"


def encode_query_value(value: str) -> str:
    """Percent-encodes a query-string value (RFC 3986 unreserved characters kept)."""
    return _quote(str(value), safe="")


def split_url(url: str):
    """(https, authority, path_with_query) of an absolute http(s) URL, or None."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None
    rest = rest.split("#", 1)[0]
    end = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0], default=len(rest))
    authority, path = rest[:end], rest[end:]
    if not authority or "@" in authority:
        return None
    return scheme.lower() == "https", authority, path if path.startswith("/") else "/" + path


def resolve(base: str, location: str):
    """A `Location` header resolved against the URL that sent it, or None."""
    if split_url(location):
        return location
    parts = split_url(base)
    if not parts:
        return None
    https, authority, path = parts
    scheme = "https" if https else "http"
    if location.startswith("//"):
        return f"{scheme}:{location}"
    if location.startswith("/"):
        return f"{scheme}://{authority}{location}"
    directory = path.split("?", 1)[0]
    directory = directory[:directory.rfind("/") + 1]
    return f"{scheme}://{authority}{directory}{location}"


def get(url: str, headers=None, max_bytes: int = DEFAULT_MAX_BYTES) -> Response:
    """GETs `url`, following up to MAX_REDIRECTS redirects and reading at most
    `max_bytes` of body (more is HttpError kind `too_large`). `headers`: a dict or
    (name, value) pairs added to the request; credentials among them (`Authorization`,
    `Cookie`, `Proxy-Authorization`) are not sent on to a redirect's other origin."""
    for _ in range(MAX_REDIRECTS + 1):
        response = _send_once(url, headers, max_bytes)
        if response.status in (301, 302, 303, 307, 308):
            location = response.header("location")
            nxt = resolve(url, location) if location else None
            if not nxt:
                raise HttpError("redirects", f"too many or broken redirects from {url}")
            if headers and _origin(nxt) != _origin(url):
                headers = [(n, v) for n, v in (headers.items() if isinstance(headers, dict) else headers)
                           if n.lower() not in _CREDENTIALS]
            url = nxt
            continue
        return response
    raise HttpError("redirects", f"too many or broken redirects from {url}")


_CREDENTIALS = ("authorization", "cookie", "proxy-authorization")


def _origin(url: str):
    """(scheme, host, port) of an absolute URL, lower-cased; None when it has none."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
    return scheme.lower(), authority.lower()


def _bindings():
    try:
        from wit_world.imports import http_types, outgoing_handler, streams
    except ImportError:
        raise HttpError(
            "other",
            "this tool was built without wasi:http: declare `network = [...]` under "
            "[capabilities] in declaration.toml and rebuild") from None
    return http_types, outgoing_handler, streams


def _send_once(url: str, headers, max_bytes: int) -> Response:
    from componentize_py_types import Err

    t, outgoing_handler, streams = _bindings()
    parts = split_url(url)
    if not parts:
        raise HttpError("bad_url", f"not an absolute http(s) URL: {url}")
    https, authority, path = parts
    bad = HttpError("bad_url", f"not an absolute http(s) URL: {url}")
    pairs = list(_DEFAULT_HEADERS)
    extra = headers.items() if isinstance(headers, dict) else (headers or [])
    given = {str(n).lower() for n, _ in extra}
    pairs = [(n, v) for n, v in pairs if n not in given] + [(str(n), v) for n, v in extra]
    try:
        fields = t.Fields.from_list(
            [(n, v if isinstance(v, bytes) else str(v).encode()) for n, v in pairs])
    except Err as e:
        raise HttpError("bad_url", f"a request header is not allowed: {e.value}") from None
    request = t.OutgoingRequest(fields)
    try:
        request.set_method(t.Method_Get())
        request.set_scheme(t.Scheme_Https() if https else t.Scheme_Http())
        request.set_authority(authority)
        request.set_path_with_query(path)
        body = request.body()
    except Err:
        raise bad from None
    try:
        t.OutgoingBody.finish(body, None)
        future = outgoing_handler.handle(request, None)
    except Err as e:
        raise _classify(url, e.value) from None
    with future:
        future.subscribe().block()
        outcome = future.get()
    if outcome is None or isinstance(outcome, Err):
        raise HttpError("other", f"no response from {url}")
    inner = outcome.value
    if isinstance(inner, Err):
        raise _classify(url, inner.value)
    with inner.value as response:
        status = response.status()
        with response.headers() as h:
            head = [(n.lower(), v.decode("utf-8", "replace")) for n, v in h.entries()]
        try:
            incoming = response.consume()
        except Err:
            raise HttpError("other", "response body already taken") from None
        data = _read_body(url, incoming, max_bytes, t, streams)
    return Response(url, status, head, data)


def _read_body(url, incoming, max_bytes, t, streams) -> bytes:
    from componentize_py_types import Err

    with incoming:
        with incoming.stream() as stream:
            chunks, size = [], 0
            while True:
                try:
                    chunk = stream.blocking_read(_READ_CHUNK)
                except Err as e:
                    if isinstance(e.value, streams.StreamError_Closed):
                        break
                    err = e.value.value
                    code = t.http_error_code(err)
                    if code is not None:
                        raise _classify(url, code) from None
                    raise _classify_text(url, err.to_debug_string()) from None
                size += len(chunk)
                if size > max_bytes:
                    raise HttpError("too_large", f"the response from {url} is too large")
                chunks.append(chunk)
    return b"".join(chunks)


def _classify_text(url: str, text: str) -> HttpError:
    if "body size exceeds limit" in text:
        return HttpError("too_large", f"the response from {url} is too large")
    if "timeout" in text:
        return HttpError("timeout", f"timed out fetching {url}")
    return HttpError("other", f"reading {url}: {text}")


_WORDS = {
    "ConnectionRefused": "the connection was refused",
    "ConnectionTerminated": "the connection was closed early",
    "ConnectionLimitReached": "too many connections",
    "DestinationNotFound": "the destination was not found",
    "DestinationUnavailable": "the destination is unavailable",
    "TlsProtocolError": "the TLS handshake failed",
    "TlsCertificateError": "the server's TLS certificate was refused",
    "TlsAlertReceived": "the server ended TLS with an alert",
    "HttpProtocolError": "the server broke the HTTP protocol",
}


def _classify(url: str, code) -> HttpError:
    name = type(code).__name__.removeprefix("ErrorCode_")
    if name == "HttpRequestDenied":
        return HttpError("denied", f"the host refused {url}: the destination is not granted to this tool")
    if name == "DestinationIpProhibited":
        return HttpError(
            "prohibited",
            f"the host refused {url}: it resolves to a loopback, private or link-local address")
    if name in ("DnsTimeout", "ConnectionTimeout", "ConnectionReadTimeout", "HttpResponseTimeout"):
        return HttpError("timeout", f"timed out fetching {url}")
    if name == "HttpResponseBodySize":
        return HttpError("too_large", f"the response from {url} is too large")
    if name == "DnsError":
        rcode = getattr(code.value, "rcode", None)
        words = "the name does not resolve" + (f" ({rcode})" if rcode else "")
    elif name == "InternalError" and getattr(code, "value", None):
        words = code.value
    else:
        words = _WORDS.get(name) or "".join(
            (" " + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(name))
    return HttpError("other", f"fetching {url}: {words}")
