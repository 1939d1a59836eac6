//! DNS messages: header, question, EDNS(0) OPT, and a compressing writer.
