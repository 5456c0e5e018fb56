//! The protobuf wire format, the part Perfetto's trace needs: varints,
//! fixed64 and length-delimited fields. Hand-written: four wire types do
//! not justify a code generator or a dependency, and the field numbers
//! come from Perfetto's own `.proto` files (the constants in
//! `perfetto/tracks.rs` name each one).
//!
//! Everything is written into one buffer, with no allocation per
//! message: a nested message reserves four bytes for its length and
//! fills them in when it ends, as a varint padded to four bytes
//! (`0x80 0x80 0x80 0x00` is 0). Protobuf parsers accept such padding,
//! and Perfetto's own writer (protozero) sizes nested messages this way
//! for the same reason. Four bytes hold lengths below 2^28, far above
//! any packet written here.

/// A buffer of protobuf being written.
#[derive(Default)]
pub(crate) struct Buf {
    pub(crate) bytes: Vec<u8>,
}

/// Where a nested message's length goes (from [`Buf::begin`]).
#[must_use]
pub(crate) struct Open(usize);

impl Buf {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    /// A varint field (uint32/64, int32/64 non-negative, enum, bool).
    pub(crate) fn uint(&mut self, field: u32, v: u64) {
        self.key(field, 0);
        self.varint(v);
    }

    /// A fixed64 field.
    pub(crate) fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, 1);
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }

    /// A string field.
    pub(crate) fn str(&mut self, field: u32, v: &str) {
        self.key(field, 2);
        self.varint(v.len() as u64);
        self.bytes.extend_from_slice(v.as_bytes());
    }

    /// Starts a nested message in `field`; [`Buf::end`] closes it.
    pub(crate) fn begin(&mut self, field: u32) -> Open {
        self.key(field, 2);
        self.bytes.extend_from_slice(&[0x80, 0x80, 0x80, 0x00]);
        Open(self.bytes.len())
    }

    /// Closes a nested message, writing its length (padded varint).
    pub(crate) fn end(&mut self, open: Open) {
        let len = self.bytes.len() - open.0;
        assert!(len < 1 << 28, "a protobuf message over 256 MiB");
        let at = open.0 - 4;
        for i in 0..4 {
            let mut b = (len >> (7 * i)) as u8 & 0x7f;
            if i < 3 {
                b |= 0x80;
            }
            self.bytes[at + i] = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_encode_as_protobuf_does() {
        let mut m = Buf::default();
        m.uint(1, 150);
        assert_eq!(m.bytes, [0x08, 0x96, 0x01], "the protobuf docs' example");
        let mut m = Buf::default();
        m.str(2, "testing");
        assert_eq!(m.bytes, b"\x12\x07testing");
        let mut m = Buf::default();
        m.fixed64(47, 1);
        assert_eq!(m.bytes[..2], [0xf9, 0x02], "field 47, wire type 1");
        assert_eq!(m.bytes.len(), 10);
    }

    #[test]
    fn a_nested_length_is_a_varint_padded_to_four_bytes() {
        let mut m = Buf::default();
        let o = m.begin(3);
        m.uint(1, 150);
        m.end(o);
        assert_eq!(m.bytes, [0x1a, 0x83, 0x80, 0x80, 0x00, 0x08, 0x96, 0x01]);
        let mut m = Buf::default();
        let o = m.begin(1);
        m.bytes.extend(std::iter::repeat_n(0u8, 300));
        m.end(o);
        // 300 = 0b10_0101100: 0xac 0x02, padded.
        assert_eq!(m.bytes[1..5], [0xac, 0x82, 0x80, 0x00]);
    }
}
