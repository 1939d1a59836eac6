//! lode-io: sockets.
