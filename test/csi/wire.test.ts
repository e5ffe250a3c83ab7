// The wire bytes of every message the CSI client sends, checked against encodings computed by hand from the CSI
// spec's field numbers (key byte = field number << 3 | wire type: 0 varint, 2 length-delimited), and the decoding
// of replies written byte by byte. If a descriptor's number or kind were wrong, these bytes would differ.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeMessage, encodeMessage, MessageEncodeError } from '../../src/csi/codec.ts';
import { CSI_RPCS } from '../../src/csi/services.ts';
import { WireDecodeError } from '../../src/csi/wire.ts';

/** Bytes from hex pairs; anything after `#` on a line is a comment. */
function hex(text: string): Buffer {
  return Buffer.from(
    text
      .split('\n')
      .map((l) => l.replace(/#.*/, ''))
      .join('')
      .replace(/\s+/g, ''),
    'hex',
  );
}

const encode = <N extends keyof typeof CSI_RPCS>(rpc: N, value: Record<string, unknown>) =>
  encodeMessage(CSI_RPCS[rpc].request, value);

describe('CSI request encodings (hand-computed bytes)', () => {
  it('the empty requests (GetPluginInfo, GetPluginCapabilities, Probe, ControllerGetCapabilities, NodeGetInfo) are zero bytes', () => {
    for (const rpc of [
      'getPluginInfo',
      'getPluginCapabilities',
      'probe',
      'controllerGetCapabilities',
      'nodeGetInfo',
    ] as const) {
      assert.deepEqual(encode(rpc, {}), Buffer.alloc(0), rpc);
    }
  });

  it('CreateVolumeRequest: every field, in field-number order', () => {
    const bytes = encode('createVolume', {
      // Given out of order on purpose: the encoder writes by field number.
      mutableParameters: { iops: '3' },
      name: 'pvc-1',
      capacityRange: { requiredBytes: 1n << 30n },
      volumeCapabilities: [
        { mount: { fsType: 'ext4', mountFlags: ['ro'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
        { block: {}, accessMode: { mode: 'MULTI_NODE_MULTI_WRITER' } },
      ],
      parameters: { type: 'ssd' },
      secrets: { p: 'w' },
      volumeContentSource: { volume: { volumeId: 'src' } },
      accessibilityRequirements: { requisite: [{ segments: { zone: 'a' } }], preferred: [{ segments: { zone: 'a' } }] },
    });
    const expected = hex(`
      0a 05 70 76 63 2d 31             # 1 name = "pvc-1"
      12 06                            # 2 capacity_range (6 bytes)
        08 80 80 80 80 04              #   1 required_bytes = 2^30: low 28 bits zero (4 x 0x80), then 4
      1a 10                            # 3 volume_capabilities[0] (16 bytes)
        12 0a                          #   2 mount (10 bytes)
          0a 04 65 78 74 34            #     1 fs_type = "ext4"
          12 02 72 6f                  #     2 mount_flags[0] = "ro"
        1a 02 08 01                    #   3 access_mode { 1 mode = SINGLE_NODE_WRITER (1) }
      1a 06                            # 3 volume_capabilities[1] (6 bytes)
        0a 00                          #   1 block {} (present, empty)
        1a 02 08 05                    #   3 access_mode { 1 mode = MULTI_NODE_MULTI_WRITER (5) }
      22 0b                            # 4 parameters entry (11 bytes)
        0a 04 74 79 70 65 12 03 73 73 64   # key "type", value "ssd"
      2a 06 0a 01 70 12 01 77          # 5 secrets entry: key "p", value "w"
      32 07                            # 6 volume_content_source (7 bytes)
        12 05 0a 03 73 72 63           #   2 volume { 1 volume_id = "src" }
      3a 1a                            # 7 accessibility_requirements (26 bytes)
        0a 0b 0a 09 0a 04 7a 6f 6e 65 12 01 61   # 1 requisite[0] { 1 segments entry: "zone" = "a" }
        12 0b 0a 09 0a 04 7a 6f 6e 65 12 01 61   # 2 preferred[0] { 1 segments entry: "zone" = "a" }
      42 09 0a 04 69 6f 70 73 12 01 33 # 8 mutable_parameters entry: "iops" = "3"
    `);
    assert.equal(bytes.toString('hex'), expected.toString('hex'));
  });

  it('CreateVolumeRequest: proto3 defaults are left out, a present empty message is not', () => {
    const bytes = encode('createVolume', { name: '', capacityRange: { requiredBytes: 0n }, parameters: {} });
    assert.equal(
      bytes.toString('hex'),
      hex('12 00 # 2 capacity_range {} (required_bytes 0 is the default)').toString('hex'),
    );
  });

  it('DeleteVolumeRequest', () => {
    const bytes = encode('deleteVolume', { volumeId: 'vol-1', secrets: { k: 'v' } });
    const expected = hex(`
      0a 05 76 6f 6c 2d 31             # 1 volume_id = "vol-1"
      12 06 0a 01 6b 12 01 76          # 2 secrets entry: key "k", value "v"
    `);
    assert.equal(bytes.toString('hex'), expected.toString('hex'));
  });

  it('GetCapacityRequest', () => {
    const bytes = encode('getCapacity', {
      volumeCapabilities: [{ mount: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } }],
      parameters: { type: 'ssd' },
      accessibleTopology: { segments: { zone: 'a' } },
    });
    const expected = hex(`
      0a 06 12 00 1a 02 08 01          # 1 volume_capabilities[0] { 2 mount {}, 3 access_mode { mode 1 } }
      12 0b 0a 04 74 79 70 65 12 03 73 73 64   # 2 parameters entry "type" = "ssd"
      1a 0b 0a 09 0a 04 7a 6f 6e 65 12 01 61   # 3 accessible_topology { 1 segments entry "zone" = "a" }
    `);
    assert.equal(bytes.toString('hex'), expected.toString('hex'));
  });

  it('ControllerExpandVolumeRequest', () => {
    const bytes = encode('controllerExpandVolume', {
      volumeId: 'v',
      capacityRange: { requiredBytes: 1n << 31n },
      secrets: { k: 'v' },
      volumeCapability: { mount: { fsType: 'xfs' }, accessMode: { mode: 'SINGLE_NODE_MULTI_WRITER' } },
    });
    const expected = hex(`
      0a 01 76                         # 1 volume_id = "v"
      12 06 08 80 80 80 80 08          # 2 capacity_range { 1 required_bytes = 2^31: 4 x 0x80, then 8 }
      1a 06 0a 01 6b 12 01 76          # 3 secrets entry "k" = "v"
      22 0b                            # 4 volume_capability (11 bytes)
        12 05 0a 03 78 66 73           #   2 mount { 1 fs_type = "xfs" }
        1a 02 08 07                    #   3 access_mode { mode = SINGLE_NODE_MULTI_WRITER (7) }
    `);
    assert.equal(bytes.toString('hex'), expected.toString('hex'));
  });

  it('ListVolumesRequest', () => {
    assert.equal(
      encode('listVolumes', { maxEntries: 100, startingToken: '5' }).toString('hex'),
      hex('08 64 # 1 max_entries = 100\n12 01 35 # 2 starting_token = "5"').toString('hex'),
    );
    assert.deepEqual(encode('listVolumes', {}), Buffer.alloc(0));
  });

  it("a negative int64 is its 64-bit two's complement in 10 bytes", () => {
    const bytes = encodeMessage(CSI_RPCS.createVolume.request, { capacityRange: { requiredBytes: -1n } });
    assert.equal(bytes.toString('hex'), hex('12 0b 08 ff ff ff ff ff ff ff ff ff 01').toString('hex'));
    assert.equal(decodeMessage(CSI_RPCS.createVolume.request, bytes).capacityRange?.requiredBytes, -1n);
  });

  it('a value of the wrong type is refused, naming the field', () => {
    assert.throws(
      () => encode('deleteVolume', { volumeId: 5 }),
      (e: unknown) => e instanceof MessageEncodeError && /DeleteVolumeRequest.volumeId/.test(e.message),
    );
    assert.throws(
      () => encode('createVolume', { volumeCapabilities: [{ accessMode: { mode: 'EVERYWHERE' } }] }),
      MessageEncodeError,
    );
  });
});

describe('CSI reply decodings (bytes written by hand)', () => {
  it('CreateVolumeResponse with capacity, context, content source and topology; unknown fields are skipped', () => {
    const bytes = hex(`
      0a 2d                            # 1 volume (45 bytes)
        08 80 08                       #   1 capacity_bytes = 1024
        12 02 69 64                    #   2 volume_id = "id"
        1a 06 0a 01 6b 12 01 76        #   3 volume_context entry "k" = "v"
        22 07 0a 05 0a 03 73 6e 70     #   4 content_source { 1 snapshot { 1 snapshot_id = "snp" } }
        2a 0b 0a 09 0a 04 7a 6f 6e 65 12 01 62   # 5 accessible_topology[0] "zone" = "b"
        f8 06 01                       #   111 (unknown varint field): skipped
        82 07 02 68 69                 #   112 (unknown bytes field): skipped
    `);
    assert.deepEqual(decodeMessage(CSI_RPCS.createVolume.response, bytes), {
      volume: {
        capacityBytes: 1024n,
        volumeId: 'id',
        volumeContext: { k: 'v' },
        contentSource: { snapshot: { snapshotId: 'snp' } },
        accessibleTopology: [{ segments: { zone: 'b' } }],
      },
    });
  });

  it('ProbeResponse: ready absent, false, true', () => {
    const probe = CSI_RPCS.probe.response;
    assert.deepEqual(decodeMessage(probe, Buffer.alloc(0)), {});
    assert.deepEqual(decodeMessage(probe, hex('0a 00 # 1 ready = BoolValue{} (false)')), { ready: {} });
    assert.deepEqual(decodeMessage(probe, hex('0a 02 08 01 # 1 ready = BoolValue{ value true }')), {
      ready: { value: true },
    });
  });

  it('capabilities: an enum value we do not know decodes as UNKNOWN', () => {
    const bytes = hex(`
      0a 04 0a 02 08 01                # 1 capabilities[0] { 1 rpc { 1 type = CREATE_DELETE_VOLUME } }
      0a 04 0a 02 08 63                # 1 capabilities[1] { 1 rpc { 1 type = 99 } }
    `);
    assert.deepEqual(decodeMessage(CSI_RPCS.controllerGetCapabilities.response, bytes), {
      capabilities: [{ rpc: { type: 'CREATE_DELETE_VOLUME' } }, { rpc: { type: 'UNKNOWN' } }],
    });
  });

  it('GetPluginCapabilities with a service and a volume expansion (the oneof)', () => {
    const bytes = hex(`
      0a 04 0a 02 08 02                # capabilities[0] { 1 service { type = VOLUME_ACCESSIBILITY_CONSTRAINTS } }
      0a 04 12 02 08 01                # capabilities[1] { 2 volume_expansion { type = ONLINE } }
    `);
    assert.deepEqual(decodeMessage(CSI_RPCS.getPluginCapabilities.response, bytes), {
      capabilities: [
        { service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' } },
        { volumeExpansion: { type: 'ONLINE' } },
      ],
    });
  });

  it('GetCapacityResponse with the Int64Value wrapper', () => {
    const bytes = hex('08 0a # 1 available_capacity = 10\n12 02 08 05 # 2 maximum_volume_size { value 5 }');
    assert.deepEqual(decodeMessage(CSI_RPCS.getCapacity.response, bytes), {
      availableCapacity: 10n,
      maximumVolumeSize: { value: 5n },
    });
  });

  it('malformed input is a WireDecodeError', () => {
    const response = CSI_RPCS.createVolume.response;
    assert.throws(() => decodeMessage(response, hex('0a 05 08')), WireDecodeError); // length 5, 1 byte follows
    assert.throws(() => decodeMessage(response, hex('0a 01 80')), WireDecodeError); // truncated varint inside
    assert.throws(() => decodeMessage(response, hex('08 01')), WireDecodeError); // field 1 is a message, not a varint
    assert.throws(() => decodeMessage(response, hex('0b')), WireDecodeError); // wire type 3 (groups) unsupported
  });
});

describe('Node service encodings (hand-computed bytes; the reference plugin serves them)', () => {
  it('NodePublishVolumeRequest: every field, in field-number order', () => {
    const bytes = encode('nodePublishVolume', {
      volumeContext: { c: 'd' },
      volumeId: 'v',
      publishContext: { a: 'b' },
      stagingTargetPath: '/s',
      targetPath: '/t',
      volumeCapability: { mount: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
      readonly: true,
      secrets: { k: 'x' },
    });
    const expected = hex(`
      0a 01 76                         # 1 volume_id = "v"
      12 06 0a 01 61 12 01 62          # 2 publish_context entry: "a" = "b"
      1a 02 2f 73                      # 3 staging_target_path = "/s"
      22 02 2f 74                      # 4 target_path = "/t"
      2a 06                            # 5 volume_capability (6 bytes)
        12 00                          #   2 mount {} (present, empty)
        1a 02 08 01                    #   3 access_mode { 1 mode = SINGLE_NODE_WRITER }
      30 01                            # 6 readonly = true
      3a 06 0a 01 6b 12 01 78          # 7 secrets entry: "k" = "x"
      42 06 0a 01 63 12 01 64          # 8 volume_context entry: "c" = "d"
    `);
    assert.deepEqual(bytes, expected);
  });

  it('NodeUnpublishVolumeRequest, and NodeGetCapabilitiesResponse decoded', () => {
    assert.deepEqual(encode('nodeUnpublishVolume', { volumeId: 'v', targetPath: '/t' }), hex('0a 01 76 12 02 2f 74'));
    assert.deepEqual(encode('nodeGetCapabilities', {}), Buffer.alloc(0));
    // capabilities[0] { 1 rpc { 1 type = GET_VOLUME_STATS (2) } }, capabilities[1] { rpc { type = VOLUME_MOUNT_GROUP (6) } }
    assert.deepEqual(decodeMessage(CSI_RPCS.nodeGetCapabilities.response, hex('0a 04 0a 02 08 02 0a 04 0a 02 08 06')), {
      capabilities: [{ rpc: { type: 'GET_VOLUME_STATS' } }, { rpc: { type: 'VOLUME_MOUNT_GROUP' } }],
    });
  });
});
