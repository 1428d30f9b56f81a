"""The `hermetic:declaration` custom section: append one to a component, read it back.

The host reads the declaration (TOML) from this section without running the
component; a second section of that name is refused, so appending refuses too.
Pure Python, no dependencies (used by the build, not inside the component).
"""

SECTION = "hermetic:declaration"
# host/policy/src/declaration.rs MAX_DECLARATION_BYTES
MAX_DECLARATION_BYTES = 64 * 1024
_MAGIC = b"\0asm"


class SectionError(Exception):
    """The input is not WebAssembly, or the declaration cannot be appended."""


def leb128(n: int) -> bytes:
    """Unsigned LEB128."""
    if n < 0:
        raise ValueError("leb128 of a negative number")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_leb128(data: bytes, pos: int):
    """(value, position after it); SectionError when it runs past the end."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise SectionError("truncated LEB128")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def custom_sections(data: bytes):
    """(name, payload) of every top-level custom section (id 0)."""
    if data[:4] != _MAGIC or len(data) < 8:
        raise SectionError("not WebAssembly (no \\0asm header)")
    pos = 8
    while pos < len(data):
        sid = data[pos]
        size, body = read_leb128(data, pos + 1)
        end = body + size
        if end > len(data):
            raise SectionError(f"section at byte {pos} runs past the end")
        if sid == 0:
            nlen, npos = read_leb128(data, body)
            yield data[npos:npos + nlen].decode("utf-8", "replace"), data[npos + nlen:end]
        pos = end


def append_declaration(component: bytes, declaration: bytes) -> bytes:
    """`component` with a `hermetic:declaration` section holding `declaration` appended."""
    if any(name == SECTION for name, _ in custom_sections(component)):
        raise SectionError(f"the component already has a {SECTION} section")
    if len(declaration) > MAX_DECLARATION_BYTES:
        raise SectionError(
            f"the declaration is {len(declaration)} bytes; the host reads at most {MAX_DECLARATION_BYTES}")
    try:
        declaration.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SectionError(f"the declaration is not UTF-8: {e}") from None
    name = SECTION.encode()
    body = leb128(len(name)) + name + declaration
    return component + b"\x00" + leb128(len(body)) + body


def read_declaration(component: bytes):
    """The payload of the top-level declaration section, or None."""
    for name, payload in custom_sections(component):
        if name == SECTION:
            return payload
    return None


def count_core_instances(component: bytes) -> int:
    """Core module instantiations a component declares (the `instantiate` entries of
    its core-instance sections, id 2; bags of exports are not instances), nested
    components (id 4) counted once each. What the host's `core_instances` limit counts
    when each nested component is instantiated once (true of componentize-py's output)."""
    if component[:4] != _MAGIC or len(component) < 8:
        raise SectionError("not WebAssembly (no \\0asm header)")
    if component[4:8] == b"\x01\x00\x00\x00":
        return 1  # a core module: one instance
    total, pos = 0, 8
    while pos < len(component):
        sid = component[pos]
        size, body = read_leb128(component, pos + 1)
        end = body + size
        if sid == 2:
            total += _count_instantiations(component, body)
        elif sid == 4:
            total += count_core_instances(component[body:end])
        pos = end
    return total


def _skip_name(data: bytes, pos: int) -> int:
    n, pos = read_leb128(data, pos)
    return pos + n


def _count_instantiations(data: bytes, pos: int) -> int:
    count, pos = read_leb128(data, pos)
    real = 0
    for _ in range(count):
        kind = data[pos]
        pos += 1
        if kind == 0x00:  # instantiate moduleidx with (name, instance idx)*
            real += 1
            _, pos = read_leb128(data, pos)
            args, pos = read_leb128(data, pos)
            for _ in range(args):
                pos = _skip_name(data, pos) + 1  # name, 0x12
                _, pos = read_leb128(data, pos)
        elif kind == 0x01:  # a bag of (name, sort, idx) exports
            exports, pos = read_leb128(data, pos)
            for _ in range(exports):
                pos = _skip_name(data, pos) + 1  # name, sort byte
                _, pos = read_leb128(data, pos)
        else:
            raise SectionError(f"unknown core instance kind {kind:#x}")
    return real
