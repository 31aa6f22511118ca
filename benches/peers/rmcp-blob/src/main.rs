//! An rmcp 3.11 peer serving one resource over stdio: `test://blob/1mib`, 1 MiB of deterministic binary data
//! (the bytes of the testbed's resource of the same URI), built on each read and returned as blob contents, i.e.
//! base64 on the wire. Listed by `resources/list`, read by `resources/read`; anything else is rmcp's default.
//!
//! Usage: rmcp-blob stdio
use base64::Engine as _;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};

const URI: &str = "test://blob/1mib";
const MIME_TYPE: &str = "application/octet-stream";

/// The resource's bytes: 1 MiB, the same on every read, built once and copied for each read (as our testbed does).
fn blob() -> Vec<u8> {
    static BLOB: std::sync::LazyLock<Vec<u8>> =
        std::sync::LazyLock::new(|| (0..1u32 << 20).map(|i| (i * 31 % 251) as u8).collect());
    BLOB.clone()
}

#[derive(Debug, Clone, Copy)]
struct BlobServer;

impl ServerHandler for BlobServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = Resource::new(URI, "blob_1mib").with_mime_type(MIME_TYPE);
        Ok(ListResourcesResult::with_all_items(vec![resource]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != URI {
            return Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None));
        }
        let encoded = base64::engine::general_purpose::STANDARD.encode(blob());
        let contents = ResourceContents::blob(encoded, URI).with_mime_type(MIME_TYPE);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("stdio") => {
            let service = BlobServer.serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
            Ok(())
        }
        _ => {
            eprintln!("usage: rmcp-blob stdio");
            std::process::exit(2);
        }
    }
}
