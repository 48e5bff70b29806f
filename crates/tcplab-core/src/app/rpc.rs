//! Request/response bookkeeping over one connection's two byte streams.
//!
//! Model: the client writes requests one after another into its stream; the server reads
//! them in order and answers each, in order, in its own stream (HTTP/1.1, and ONC RPC as
//! the Linux NFS client uses one TCP connection: replies may in principle come out of
//! order, but a server answering sequentially reads from one file sends them in order;
//! tcplab keeps them in order). Message `k` ends at the running total of the sizes before
//! it plus its own, so a side knows a message is complete when the bytes it has read
//! reach that offset. Queues grow per request, never per packet.

use std::collections::VecDeque;

/// A request in flight on one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rpc {
    /// The app's id for the request.
    pub id: u64,
    /// Offset in the client's stream where the request ends.
    pub req_end: u64,
    /// Response size the server will send.
    pub resp_bytes: u64,
    /// Offset in the server's stream where the response ends (known once answered).
    pub resp_end: u64,
}

/// One connection's requests and responses.
#[derive(Clone, Debug, Default)]
pub struct RpcConn {
    /// Bytes the client has written (requests).
    client_written: u64,
    /// Bytes the server has written (responses).
    server_written: u64,
    /// Requests written by the client and not yet fully read by the server.
    to_server: VecDeque<Rpc>,
    /// Requests answered by the server (response written) not yet fully read by the client.
    to_client: VecDeque<Rpc>,
}

impl RpcConn {
    /// The client sends request `id` of `req_bytes` asking for `resp_bytes`; returns the
    /// bytes to write on the client side.
    pub fn request(&mut self, id: u64, req_bytes: u64, resp_bytes: u64) -> u64 {
        self.client_written += req_bytes;
        self.to_server.push_back(Rpc {
            id,
            req_end: self.client_written,
            resp_bytes,
            resp_end: 0,
        });
        req_bytes
    }

    /// The server has read `read_total` bytes: the next request now fully read, if any
    /// (call repeatedly until `None`).
    pub fn server_next_request(&mut self, read_total: u64) -> Option<Rpc> {
        if self
            .to_server
            .front()
            .is_some_and(|r| r.req_end <= read_total)
        {
            return self.to_server.pop_front();
        }
        None
    }

    /// The server answers `rpc` (after reading it); returns the bytes to write on the
    /// server side.
    pub fn respond(&mut self, mut rpc: Rpc) -> u64 {
        self.server_written += rpc.resp_bytes;
        rpc.resp_end = self.server_written;
        self.to_client.push_back(rpc);
        rpc.resp_bytes
    }

    /// The client has read `read_total` bytes: the next response now complete, if any
    /// (call repeatedly until `None`).
    pub fn client_next_response(&mut self, read_total: u64) -> Option<Rpc> {
        if self
            .to_client
            .front()
            .is_some_and(|r| r.resp_end <= read_total)
        {
            return self.to_client.pop_front();
        }
        None
    }

    /// Requests not yet answered in full (sent and waiting, or being answered).
    pub fn outstanding(&self) -> usize {
        self.to_server.len() + self.to_client.len()
    }

    /// Bytes the client has written in all.
    pub fn client_written(&self) -> u64 {
        self.client_written
    }

    /// Bytes the server has written in all.
    pub fn server_written(&self) -> u64 {
        self.server_written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_responses_complete_by_offset() {
        let mut c = RpcConn::default();
        assert_eq!(c.request(1, 100, 1000), 100);
        assert_eq!(c.request(2, 50, 10), 50);
        assert_eq!(c.server_next_request(99), None);
        let r1 = c.server_next_request(120).unwrap();
        assert_eq!(r1.id, 1);
        assert_eq!(c.server_next_request(120), None);
        assert_eq!(c.respond(r1), 1000);
        let r2 = c.server_next_request(150).unwrap();
        c.respond(r2);
        assert_eq!(c.client_next_response(999), None);
        assert_eq!(c.client_next_response(1005).unwrap().id, 1);
        assert_eq!(c.client_next_response(1005), None);
        assert_eq!(c.client_next_response(1010).unwrap().id, 2);
        assert_eq!(c.outstanding(), 0);
    }
}
