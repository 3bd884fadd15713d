//! Serving MCP over stdin/stdout, or any byte stream pair: newline-delimited JSON-RPC
//! (`framing`) on the process's own handles (`handles`), with each request counted in
//! the connection's flow until its handler finishes.

mod handles;

use std::sync::Arc;

use rmcp::model::ProtocolVersion;
use rmcp::service::{NotificationContext, RequestContext, Service, ServiceRole};
use rmcp::{ErrorData, RoleServer, ServiceExt};

use super::ServeError;
use super::framing::{LineTransport, WRITE_GRACE};
use crate::mcp::flow::FlowHandle;
use crate::mcp::server::{MemdirServer, Transport};
use crate::mcp::toolset::ToolSet;
use crate::memory::Memdir;

/// Serves MCP over stdin/stdout until the client closes stdin; the process ends next.
///
/// The stores and their search indexes are then left open, never closed: closing the
/// last handle on an index checkpoints its write-ahead log into the database and fsyncs
/// it, which a disk busy with other writes can stretch past a second, and the client that
/// closed stdin waits for the process to exit. The index is a cache, and SQLite finishes
/// that checkpoint when the next process opens it; every memory and history write was
/// durable before it was answered.
pub async fn serve_stdio(memdir: Memdir, tools: ToolSet) -> Result<(), ServeError> {
    let (reader, writer, _restore) = handles::transport();
    let memdir = Arc::new(memdir);
    let served = serve_shared(Arc::clone(&memdir), tools, (reader, writer)).await;
    std::mem::forget(memdir);
    served
}

/// Serves MCP over any byte stream pair (stdio in production; an in-memory pipe in the
/// fuzz target) until the peer closes its side.
pub async fn serve<R, W>(
    memdir: Memdir,
    tools: ToolSet,
    transport: (R, W),
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    serve_shared(Arc::new(memdir), tools, transport).await
}

async fn serve_shared<R, W>(
    memdir: Arc<Memdir>,
    tools: ToolSet,
    transport: (R, W),
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let mut transport = LineTransport::new(transport.0, transport.1);
    let flow = transport.flow();
    let server = MemdirServer::new(memdir, tools, flow.clone(), Transport::Stdio);
    server.start_upkeep();
    let written = transport.written();
    let served = match (Counted { server, flow }).serve(transport).await {
        Ok(service) => service.waiting().await.map(drop).map_err(ServeError::from),
        Err(e) => Err(ServeError::Handshake(Box::new(e))),
    };
    // What was queued before the end goes out, also when the handshake failed (then the
    // transport is dropped unclosed); a client that stopped reading gets a grace period.
    let _ = tokio::time::timeout(WRITE_GRACE, written).await;
    served
}

/// The server as rmcp runs it: each request's handler reports when it finishes, so a
/// request counts as work in flight until then, also when its answer is dropped (rmcp
/// does not answer a cancelled request, but its handler runs on).
struct Counted {
    server: MemdirServer,
    flow: FlowHandle,
}

impl Service<RoleServer> for Counted {
    fn handle_request(
        &self,
        request: <RoleServer as ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<<RoleServer as ServiceRole>::Resp, ErrorData>> + Send + '_
    {
        let id = context.id.clone();
        async move {
            let result = Service::handle_request(&self.server, request, context).await;
            self.flow.finished(&id);
            result
        }
    }

    fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        Service::handle_notification(&self.server, notification, context)
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        Service::get_info(&self.server)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        Service::supported_protocol_versions(&self.server)
    }
}
