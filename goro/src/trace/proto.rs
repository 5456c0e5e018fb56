//! The protobuf wire format, the part Perfetto's trace needs: varints,
//! fixed64 and length-delimited fields, with nested messages written into
//! a scratch buffer and then prefixed by their length. Hand-written: four
//! wire types do not justify a code generator or a dependency, and the
//! field numbers come from Perfetto's own `.proto` files (the constants
//! in `perfetto.rs` name each one).

/// A message being written.
#[derive(Default)]
pub(crate) struct Msg {
    pub(crate) buf: Vec<u8>,
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Msg {
    pub(crate) fn new() -> Msg {
        Msg { buf: Vec::new() }
    }

    fn key(&mut self, field: u32, wire: u8) {
        varint(&mut self.buf, (u64::from(field) << 3) | u64::from(wire));
    }

    /// A varint field (uint32/64, int32/64 non-negative, enum, bool).
    pub(crate) fn uint(&mut self, field: u32, v: u64) -> &mut Msg {
        self.key(field, 0);
        varint(&mut self.buf, v);
        self
    }

    /// A fixed64 field.
    pub(crate) fn fixed64(&mut self, field: u32, v: u64) -> &mut Msg {
        self.key(field, 1);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A string or bytes field.
    pub(crate) fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Msg {
        self.key(field, 2);
        varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(v);
        self
    }

    pub(crate) fn str(&mut self, field: u32, v: &str) -> &mut Msg {
        self.bytes(field, v.as_bytes())
    }

    /// A nested message.
    pub(crate) fn msg(&mut self, field: u32, m: &Msg) -> &mut Msg {
        self.bytes(field, &m.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_encode_as_protobuf_does() {
        let mut m = Msg::new();
        m.uint(1, 150);
        assert_eq!(m.buf, [0x08, 0x96, 0x01], "the protobuf docs' example");
        let mut m = Msg::new();
        m.str(2, "testing");
        assert_eq!(m.buf, b"\x12\x07testing");
        let mut m = Msg::new();
        m.fixed64(47, 1);
        assert_eq!(m.buf[..2], [0xf9, 0x02], "field 47, wire type 1");
        assert_eq!(m.buf.len(), 10);
    }
}
