// libFuzzer entry for the ATT PDU and HCI advertising-report parsers (built by run-fuzz.sh).
// Properties: no input traps; whatever parses re-encodes to bytes that parse to the same PDU.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzATTPDU(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let pdu = try? ATTPDU(bytes: bytes) {
        precondition((try? ATTPDU(bytes: pdu.encoded)) == pdu, "re-encoded PDU parses differently")
    }
    _ = try? AdvertisingReport.reports(fromHCIPacket: bytes)
    return 0
}
