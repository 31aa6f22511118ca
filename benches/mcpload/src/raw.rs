//! HTTP/1.1 by hand, for `--raw`: one keep-alive `TcpStream` per session, each request serialized once with only
//! its id patched per call, and a minimal response reader (httparse for the head; a Content-Length, chunked or
//! read-to-close body; JSON, or SSE events scanned for the answer).

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::proto::Template;

/// Where the server is: an http:// URL on the loopback interface.
#[derive(Clone)]
pub struct Target {
    pub url: String,
    /// `host:port` as the URL spells it, for the Host header.
    pub authority: String,
    pub path: String,
    pub addr: SocketAddr,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| format!("--url must be http://...: {url}"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let with_port = if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| format!("resolving {authority}: {e}"))?
            .next()
            .ok_or_else(|| format!("{authority} resolves to nothing"))?;
        if !addr.ip().is_loopback() {
            return Err(format!("mcpload loads servers on the loopback interface only, not {addr}"));
        }
        Ok(Target { url: url.to_owned(), authority: authority.to_owned(), path: path.to_owned(), addr })
    }

    /// A POST's head for a body of `length` bytes, with `headers` besides the content types.
    pub fn head(&self, headers: &[(&str, String)], length: usize) -> Vec<u8> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n",
            self.path, self.authority
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {length}\r\n\r\n"));
        head.into_bytes()
    }

    /// A whole POST of a request, its id slot where the body's was.
    pub fn post(&self, headers: &[(&str, String)], body: Template) -> Template {
        let head = self.head(headers, body.bytes.len());
        body.after(head)
    }

    /// A whole POST of a notification.
    pub fn post_bytes(&self, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
        let mut bytes = self.head(headers, body.len());
        bytes.extend_from_slice(body);
        bytes
    }
}

/// The head of a response, as far as mcpload needs it.
pub struct Head {
    pub status: u16,
    /// `text/event-stream`.
    pub sse: bool,
    pub session: Option<String>,
    /// The server will close the connection after this response.
    pub close: bool,
}

/// One keep-alive connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    /// The body of the last response read (de-chunked).
    pub body: Vec<u8>,
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn { stream, buf: Vec::with_capacity(16 << 10), pos: 0, body: Vec::with_capacity(4 << 10) })
    }

    pub async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Read more bytes into the buffer.
    async fn fill(&mut self) -> io::Result<()> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > (64 << 10) {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.reserve(16 << 10);
        if self.stream.read_buf(&mut self.buf).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    async fn at_least(&mut self, n: usize) -> io::Result<()> {
        while self.buf.len() - self.pos < n {
            self.fill().await?;
        }
        Ok(())
    }

    /// The offset of the next CRLF after the read position, reading until there is one.
    async fn line_end(&mut self) -> io::Result<usize> {
        loop {
            if let Some(i) = self.buf[self.pos..].windows(2).position(|w| w == b"\r\n") {
                return Ok(self.pos + i);
            }
            self.fill().await?;
        }
    }

    /// Read one response: its head, and its body into `self.body`.
    pub async fn read_response(&mut self) -> io::Result<Head> {
        let head = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut r = httparse::Response::new(&mut headers);
            match r.parse(&self.buf[self.pos..]).map_err(|e| bad(format!("response head: {e}")))? {
                httparse::Status::Complete(n) => {
                    let mut head =
                        Head { status: r.code.unwrap_or(0), sse: false, session: None, close: r.version == Some(0) };
                    let mut length = None;
                    let mut chunked = false;
                    for h in r.headers.iter() {
                        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
                        if h.name.eq_ignore_ascii_case("content-length") {
                            length = Some(value.parse::<usize>().map_err(|_| bad("Content-Length"))?);
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            chunked = value.to_ascii_lowercase().contains("chunked");
                        } else if h.name.eq_ignore_ascii_case("content-type") {
                            head.sse = value.starts_with("text/event-stream");
                        } else if h.name.eq_ignore_ascii_case("connection") {
                            head.close |= value.eq_ignore_ascii_case("close");
                        } else if h.name.eq_ignore_ascii_case("mcp-session-id") {
                            head.session = Some(value.to_owned());
                        }
                    }
                    self.pos += n;
                    if (100..200).contains(&head.status) {
                        continue;
                    }
                    break (head, length, chunked);
                }
                httparse::Status::Partial => self.fill().await?,
            }
        };
        let (mut head, length, chunked) = head;
        self.body.clear();
        if head.status == 204 || head.status == 304 {
        } else if chunked {
            self.read_chunked().await?;
        } else if let Some(n) = length {
            self.at_least(n).await?;
            self.body.extend_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
        } else {
            // Neither: the body ends with the connection.
            head.close = true;
            loop {
                self.body.extend_from_slice(&self.buf[self.pos..]);
                self.pos = self.buf.len();
                match self.fill().await {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(head)
    }

    async fn read_chunked(&mut self) -> io::Result<()> {
        loop {
            let end = self.line_end().await?;
            let line = std::str::from_utf8(&self.buf[self.pos..end]).map_err(|_| bad("chunk size"))?;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size, 16).map_err(|_| bad(format!("chunk size {size:?}")))?;
            self.pos = end + 2;
            if size == 0 {
                // Trailers, if any, up to an empty line.
                loop {
                    let end = self.line_end().await?;
                    let empty = end == self.pos;
                    self.pos = end + 2;
                    if empty {
                        return Ok(());
                    }
                }
            }
            self.at_least(size + 2).await?;
            self.body.extend_from_slice(&self.buf[self.pos..self.pos + size]);
            if &self.buf[self.pos + size..self.pos + size + 2] != b"\r\n" {
                return Err(bad("a chunk not followed by CRLF"));
            }
            self.pos += size + 2;
        }
    }
}

/// Server-sent events, scanned as they arrive: each event's data (its `data:` lines joined) is handed over.
#[derive(Default)]
pub struct SseScan {
    pending: Vec<u8>,
    data: Vec<u8>,
}

impl SseScan {
    pub fn feed(&mut self, chunk: &[u8], mut on_event: impl FnMut(&[u8])) {
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(i) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let mut line = &self.pending[start..start + i];
            start += i + 1;
            if let Some(l) = line.strip_suffix(b"\r") {
                line = l;
            }
            if line.is_empty() {
                if !self.data.is_empty() {
                    on_event(&self.data);
                    self.data.clear();
                }
            } else if let Some(value) = line.strip_prefix(b"data:") {
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
            }
            // Comments, `event:`, `id:` and `retry:` lines say nothing mcpload needs.
        }
        self.pending.drain(..start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_at_blank_lines_whatever_the_chunks() {
        let stream = b": hi\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: message\ndata: x\n\n";
        for cut in 1..stream.len() {
            let mut scan = SseScan::default();
            let mut events = Vec::new();
            scan.feed(&stream[..cut], |d| events.push(d.to_vec()));
            scan.feed(&stream[cut..], |d| events.push(d.to_vec()));
            assert_eq!(events, vec![b"{\"a\":\n1}".to_vec(), b"x".to_vec()], "cut at {cut}");
        }
    }

    #[test]
    fn only_loopback_targets() {
        assert!(Target::parse("http://127.0.0.1:8080/mcp").is_ok());
        assert!(Target::parse("http://192.0.2.1:8080/mcp").is_err());
        assert!(Target::parse("https://127.0.0.1:8080/mcp").is_err());
    }

    #[tokio::test]
    async fn chunked_and_sized_bodies_on_one_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let replies: &[&[u8]] = &[
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
                b"5\r\ndata:\r\n3;x=y\r\n 1\n\r\n1\r\n\n\r\n0\r\n\r\n",
                b"HTTP/1.1 202 Accepted\r\nMcp-Session-Id: abc\r\ncontent-length: 0\r\n\r\n",
            ];
            for r in replies {
                s.write_all(r).await.unwrap();
                s.flush().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        });
        let mut c = Conn::connect(addr).await.unwrap();
        let h = c.read_response().await.unwrap();
        assert!(h.status == 200 && !h.sse && c.body == b"{}");
        let h = c.read_response().await.unwrap();
        assert!(h.sse && c.body == b"data: 1\n\n", "{:?}", String::from_utf8_lossy(&c.body));
        let h = c.read_response().await.unwrap();
        assert!(h.status == 202 && h.session.as_deref() == Some("abc") && c.body.is_empty());
    }
}
