//! # hermetic-sdk — write a hermetic tool in a few lines
//!
//! A tool is a type implementing [`Tool`] plus one [`export_tool!`] line that also embeds
//! the tool's *declaration* (what it needs: toolset, env vars, mounts, network hosts, …)
//! as a custom section the host reads without running any guest code.
//!
//! ```ignore
//! use hermetic_sdk::{Context, Tool, json, Value};
//!
//! #[derive(serde::Deserialize)]
//! struct Args { name: String }
//!
//! struct Hello;
//! impl Tool for Hello {
//!     type Args = Args;
//!     fn schema() -> Value {
//!         json!({"name": "hello", "description": "Greets someone",
//!                "parameters": {"type": "object",
//!                               "properties": {"name": {"type": "string"}},
//!                               "required": ["name"]}})
//!     }
//!     fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
//!         Ok(json!({"greeting": format!("Hello, {}!", args.name)}))
//!     }
//! }
//!
//! hermetic_sdk::export_tool!(Hello, r#"
//! name = "hello"
//! toolset = "demo"
//! "#);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the component. Drop it in a `--tools-dir`.

pub mod fs;
pub mod hook;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "keyvalue")]
pub mod kv;
#[cfg(feature = "terminal")]
pub mod terminal;

/// Generated bindings for the `hermetic:tool` world. Tool authors rarely need these.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "tool-component",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_tool_component",
        default_bindings_module: "::hermetic_sdk::bindings",
    });
}

pub use serde;
pub use serde_json::{self, Value, json};

use bindings::hermetic::tool::host;
use bindings::hermetic::tool::types::CallContext;
use serde::de::DeserializeOwned;

/// The name of the custom section holding a tool's declaration (TOML text).
pub const DECLARATION_SECTION: &str = "hermetic:declaration";

/// A tool's failure: becomes an error result the host wraps as a JSON error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for ToolError {
    fn from(s: String) -> Self {
        Self(s)
    }
}
impl From<&str> for ToolError {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}
impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        Self(e.to_string())
    }
}
impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        Self(e.to_string())
    }
}

/// Result type of tool handlers.
pub type Result<T> = std::result::Result<T, ToolError>;

/// Facts about the current call, and the host's per-call services.
#[derive(Debug, Clone)]
pub struct Context {
    /// Unique id of this call.
    pub call_id: String,
    /// Tenant the call runs for.
    pub tenant: String,
    /// Agent session ("" when none).
    pub session: String,
}

impl Context {
    /// Reports progress to the host (shown to MCP clients as progress notifications).
    pub fn progress(&self, done: u64, total: Option<u64>, message: &str) {
        host::progress(done, total, message);
    }
}

/// Log levels for [`log`].
pub use bindings::hermetic::tool::types::Level as LogLevel;

/// Sends a structured log record to the host, attributed to this tool.
pub fn log(level: LogLevel, message: &str) {
    host::log(level, message);
}

/// What a tool implements. See the crate docs for a complete example.
pub trait Tool {
    /// The arguments, deserialized from the agent's JSON object.
    type Args: DeserializeOwned;

    /// The OpenAI function schema: `{"name", "description", "parameters"}`, and
    /// optionally `"output_schema"`: an object JSON Schema of the tool's results. The
    /// host then checks every result against it (a result it does not allow is the
    /// tool's error; an `{"error": …}` report is exempt), lists it to MCP clients as
    /// `outputSchema` and sends results as `structuredContent` too.
    fn schema() -> Value;

    /// Whether the tool can work right now. Runs in the sandbox with the granted env,
    /// so checking `std::env::var("API_KEY").is_ok()` is the natural way to say
    /// "needs this key". Defaults to `true`.
    fn check() -> bool {
        true
    }

    /// Handles one call.
    fn handle(args: Self::Args, ctx: &Context) -> Result<Value>;
}

#[doc(hidden)]
pub fn __schema<T: Tool>() -> String {
    T::schema().to_string()
}

#[doc(hidden)]
pub fn __handle<T: Tool>(args: String, ctx: CallContext) -> std::result::Result<String, String> {
    let args: T::Args =
        serde_json::from_str(&args).map_err(|e| format!("invalid arguments: {e}"))?;
    let ctx = Context {
        call_id: ctx.call_id,
        tenant: ctx.tenant,
        session: ctx.session,
    };
    match T::handle(args, &ctx) {
        Ok(value) => Ok(value.to_string()),
        Err(e) => Err(e.0),
    }
}

#[doc(hidden)]
pub const fn __declaration_bytes<const N: usize>(text: &str) -> [u8; N] {
    let bytes = text.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

/// Embeds a declaration (TOML) as the `hermetic:declaration` custom section, which the
/// host reads without running the component (`export_tool!` and `export_hook!` use it).
#[doc(hidden)]
#[macro_export]
macro_rules! __embed_declaration {
    ($declaration:literal) => {
        const __HERMETIC_DECLARATION: &str = $declaration;
        #[used]
        #[unsafe(link_section = "hermetic:declaration")]
        static __HERMETIC_DECLARATION_SECTION: [u8; __HERMETIC_DECLARATION.len()] =
            $crate::__declaration_bytes(__HERMETIC_DECLARATION);
    };
}

/// Exports a [`Tool`] as the component's `tool` interface and embeds its declaration.
///
/// The declaration is TOML; the host documents every key (`hermetic inspect` shows how
/// it reads one). The minimum is `name` and `toolset`.
#[macro_export]
macro_rules! export_tool {
    ($tool:ty, $declaration:literal) => {
        const _: () = {
            $crate::__embed_declaration!($declaration);

            struct __HermeticExport;
            impl $crate::bindings::exports::hermetic::tool::tool::Guest for __HermeticExport {
                fn schema() -> ::std::string::String {
                    $crate::__schema::<$tool>()
                }
                fn check() -> bool {
                    <$tool as $crate::Tool>::check()
                }
                fn handle(
                    args: ::std::string::String,
                    ctx: $crate::bindings::hermetic::tool::types::CallContext,
                ) -> ::std::result::Result<::std::string::String, ::std::string::String> {
                    $crate::__handle::<$tool>(args, ctx)
                }
            }
            $crate::bindings::__export_tool_component!(__HermeticExport with_types_in $crate::bindings);
        };
    };
}
