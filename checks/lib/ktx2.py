"""A KTX 2.0 reader for checks, written from the specification (KTX 2.0 sections 3-4, Khronos
Data Format 1.3 section 5), independent of tilepack's Swift code: what the checks use to read
GPU tiles out of archives. One copy; every check that reads GPU tile blobs imports it.

    info = parse(blob)                     # header, level index, DFD, key/values; strict
    raw = payload(blob, "astc6x6", 256)    # the raw blocks of a KTX2 tile, or of an old raw/zlib one
"""
import struct
import zlib

IDENTIFIER = b"\xabKTX 20\xbb\r\n\x1a\n"
SUPERCOMPRESSION = {0: "none", 1: "basislz", 2: "zstd", 3: "zlib"}

# Vulkan VkFormat numbers (vk.xml): core ASTC UNORM blocks, VK_IMG_format_pvrtc.
# codec -> (vkFormat, block width, block height, bytes per block, DFD colour model)
FORMATS = {
    "astc4x4": (157, 4, 4, 16, 162),
    "astc6x6": (165, 6, 6, 16, 162),
    "astc8x8": (171, 8, 8, 16, 162),
    "pvrtc4": (1000054001, 4, 4, 8, 164),
    "pvrtc2": (1000054000, 8, 4, 8, 164),
}
BLOCKS = {codec: (bw, bh) for codec, (_, bw, bh, _, _) in FORMATS.items()}


class KTX2Error(ValueError):
    pass


def raw_size(codec, side):
    """Bytes of one side x side tile's raw blocks."""
    _, bw, bh, nbytes, _ = FORMATS[codec]
    return -(-side // bw) * -(-side // bh) * nbytes


def is_ktx2(blob):
    return bytes(blob[:12]) == IDENTIFIER


def _need(ok, what):
    if not ok:
        raise KTX2Error(what)


def parse(blob):
    """Every field of a one-level KTX2 file, checked against the file's size and the
    specification's alignment rules; the level inflated. Raises KTX2Error."""
    blob = bytes(blob)
    _need(len(blob) >= 80 and blob[:12] == IDENTIFIER, "no KTX2 identifier / header")
    (vk, type_size, w, h, d, layers, faces, levels, scheme,
     dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len) = struct.unpack_from("<9I4I2Q", blob, 12)
    _need(levels >= 1, "levelCount 0")
    index_end = 80 + 24 * levels
    _need(len(blob) >= index_end, "level index past the end")
    level_index = [struct.unpack_from("<3Q", blob, 80 + 24 * i) for i in range(levels)]
    _need(dfd_off >= index_end and dfd_off % 4 == 0 and dfd_off + dfd_len <= len(blob), "DFD outside the file")
    dfd = blob[dfd_off:dfd_off + dfd_len]
    _need(len(dfd) >= 4 and struct.unpack_from("<I", dfd)[0] == dfd_len, "dfdTotalSize")
    # The first descriptor block: the Khronos basic block.
    word0, word1 = struct.unpack_from("<2I", dfd, 4)
    block_size = word1 >> 16
    _need(block_size >= 24 and 4 + block_size <= dfd_len and (block_size - 24) % 16 == 0, "descriptorBlockSize")
    model, primaries, transfer, flags, d0, d1, d2, d3 = struct.unpack_from("<8B", dfd, 12)
    planes = struct.unpack_from("<8B", dfd, 20)
    samples = []
    for i in range((block_size - 24) // 16):
        bits, position, lower, upper = struct.unpack_from("<4I", dfd, 28 + 16 * i)
        samples.append({"bitOffset": bits & 0xFFFF, "bitLength": (bits >> 16) & 0xFF, "channelType": bits >> 24,
                        "samplePosition": position, "sampleLower": lower, "sampleUpper": upper})
    kvd = {}
    if kvd_len == 0:
        _need(kvd_off == 0, "kvdByteOffset without kvdByteLength")
        data_end = dfd_off + dfd_len
    else:
        _need(kvd_off >= dfd_off + dfd_len and kvd_off % 4 == 0 and kvd_off + kvd_len <= len(blob), "kvd outside the file")
        at, end = kvd_off, kvd_off + kvd_len
        while at < end:
            _need(end - at >= 4, "key/value length")
            (n,) = struct.unpack_from("<I", blob, at)
            _need(2 <= n <= end - at - 4, "key/value entry length")
            entry = blob[at + 4:at + 4 + n]
            _need(b"\0" in entry and entry[0] != 0, "key/value key")
            key, value = entry.split(b"\0", 1)
            kvd[key.decode("utf-8")] = value
            at += 4 + ((n + 3) & ~3)
        data_end = end
    _need(sgd_off == 0 and sgd_len == 0 or scheme == 1, "supercompression global data without BasisLZ")
    out_levels = []
    for off, length, uncompressed in level_index:
        align = 1 if scheme else _lcm(planes[0] or 1, 4)
        _need(off >= data_end and off % align == 0 and off + length <= len(blob), "level outside the file / misaligned")
        stored = blob[off:off + length]
        if scheme == 0:
            _need(length == uncompressed, "byteLength != uncompressedByteLength without supercompression")
            data = stored
        elif scheme == 3:
            z = zlib.decompressobj()
            data = z.decompress(stored, uncompressed + 1)
            _need(z.eof and not z.unused_data and len(data) == uncompressed, "zlib level does not inflate exactly")
        else:
            raise KTX2Error(f"supercompression {SUPERCOMPRESSION.get(scheme, scheme)} not read here")
        out_levels.append({"byteOffset": off, "byteLength": length, "uncompressedByteLength": uncompressed,
                           "data": data})
    return {
        "vkFormat": vk, "typeSize": type_size, "pixelWidth": w, "pixelHeight": h, "pixelDepth": d,
        "layerCount": layers, "faceCount": faces, "levelCount": levels, "supercompressionScheme": scheme,
        "dfd": {"vendorId": word0 & 0x1FFFF, "descriptorType": word0 >> 17, "versionNumber": word1 & 0xFFFF,
                "descriptorBlockSize": block_size, "colorModel": model, "colorPrimaries": primaries,
                "transferFunction": transfer, "flags": flags, "texelBlockDimension": (d0, d1, d2, d3),
                "bytesPlane": planes, "samples": samples},
        "kvd": kvd, "levels": out_levels, "fileSize": len(blob),
    }


def _lcm(a, b):
    x, y = a, b
    while y:
        x, y = y, x % y
    return a * b // x


def check_tile(info, codec, side):
    """The problems (a list of strings) of a parsed tile against what a `codec` archive of
    side x side tiles must hold."""
    vk, bw, bh, nbytes, model = FORMATS[codec]
    dfd = info["dfd"]
    want = {
        "vkFormat": vk, "typeSize": 1, "pixelWidth": side, "pixelHeight": side, "pixelDepth": 0,
        "layerCount": 0, "faceCount": 1, "levelCount": 1,
    }
    problems = [f"{k} {info[k]} != {v}" for k, v in want.items() if info[k] != v]
    if info["supercompressionScheme"] not in (0, 3):
        problems.append(f"supercompressionScheme {info['supercompressionScheme']}")
    dwant = {"vendorId": 0, "descriptorType": 0, "versionNumber": 2, "descriptorBlockSize": 40, "colorModel": model,
             "transferFunction": 1, "flags": 0, "texelBlockDimension": (bw - 1, bh - 1, 0, 0)}
    problems += [f"DFD {k} {dfd[k]} != {v}" for k, v in dwant.items() if dfd[k] != v]
    if dfd["bytesPlane"][0] != nbytes or any(dfd["bytesPlane"][1:]):
        problems.append(f"DFD bytesPlane {dfd['bytesPlane']}")
    s = dfd["samples"]
    if len(s) != 1 or s[0]["bitOffset"] != 0 or s[0]["bitLength"] != nbytes * 8 - 1 or s[0]["channelType"] != 0:
        problems.append(f"DFD samples {s}")
    if info["kvd"].get("KTXwriter") != b"tilepack\0":
        problems.append(f"KTXwriter {info['kvd'].get('KTXwriter')!r}")
    level = info["levels"][0]
    if level["uncompressedByteLength"] != raw_size(codec, side):
        problems.append(f"level uncompressedByteLength {level['uncompressedByteLength']}")
    if level["byteOffset"] + level["byteLength"] != info["fileSize"]:
        problems.append("bytes after the level")
    return problems


def payload(blob, codec, side):
    """The raw blocks of a stored GPU tile: a KTX2 tile's level, or an older archive's raw
    payload (exactly the raw size) or zlib stream of it."""
    if is_ktx2(blob):
        info = parse(blob)
        problems = check_tile(info, codec, side)
        if problems:
            raise KTX2Error("; ".join(problems))
        return info["levels"][0]["data"]
    return bytes(blob) if len(blob) == raw_size(codec, side) else zlib.decompress(blob)
