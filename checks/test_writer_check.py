"""Writes GeoTIFFs with `tilepack sample-region` in many shapes and checks each with tifffile AND
rasterio (GDAL): dtype, bands, compression, predictor, tiling, BigTIFF, geotransform, CRS (EPSG),
nodata, alpha, and that the pixels equal the generator's raw samples (--raw). One test per case
and file. Needs tifffile, rasterio, numpy and imagecodecs (the peers of checks/requirements.txt).

    python3 -m pytest checks/test_writer_check.py   (BIN=path/to/tilepack; default the debug build)
"""
import os
import subprocess

import pytest

from checks.lib.common import require

pytestmark = [pytest.mark.gdal]

# name, sample-region arguments, expectations for the DEM and colour files (key=value)
CASES = [
    ("defaults", "--size 300", "dem:dtype=int16,pred=2,bands=1 color:dtype=uint8,pred=2,bands=3"),
    ("float32", "--size 200 --only dem --dem-type float32", "dem:dtype=float32,pred=3,bands=1"),
    ("float64", "--size 200 --only dem --dem-type float64", "dem:dtype=float64,pred=3,bands=1"),
    ("uint16-alpha", "--size 200 --only color --color-type uint16 --alpha", "color:dtype=uint16,pred=2,bands=4,alpha=1"),
    ("bigtiff", "--size 160 --bigtiff", "dem:dtype=int16,pred=2,bands=1,big=1 color:dtype=uint8,pred=2,bands=3,big=1"),
    ("odd-size", "--width 1000 --height 700", "dem:dtype=int16,pred=2,bands=1 color:dtype=uint8,pred=2,bands=3"),
    ("blocks128-nopred", "--size 200 --block-size 128 --predictor none --dem-type uint16",
     "dem:dtype=uint16,pred=1,bands=1,block=128 color:dtype=uint8,pred=1,bands=3,block=128"),
]
FILES = [(name, args, spec) for name, args, expect in CASES for spec in expect.split()]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    # A missing tool fails the check (as the script did), never skips it.
    require("tifffile", "rasterio", "numpy", "imagecodecs")
    return str(tmp_path_factory.mktemp("writer-check"))


@pytest.fixture(scope="module")
def written(tilepack, work):
    """The cases' folders, each written once."""
    out = {}
    for name, args, _ in CASES:
        folder = os.path.join(work, name)
        subprocess.run([tilepack, "sample-region", "--seed", "11", "--out", folder, "--raw", *args.split()],
                       check=True, capture_output=True)
        out[name] = folder
    return out


@pytest.mark.parametrize("case, args, spec", FILES, ids=[f"{n}-{s.split(':')[0]}" for n, _, s in FILES])
def test_written_geotiff_reads_back_in_tifffile_and_rasterio(written, case, args, spec):
    import numpy as np
    import rasterio
    import tifffile
    from rasterio.enums import ColorInterp
    folder = written[case]
    kind, _, pairs = spec.partition(":")
    e = dict(p.split("=") for p in pairs.split(","))
    name = {"dem": "montblanc-dem", "color": "montblanc-color"}[kind]
    path = f"{folder}/{name}.tif"
    dtype, bands, pred = np.dtype(e["dtype"]), int(e["bands"]), int(e["pred"])
    block, big, alpha = int(e.get("block", 256)), e.get("big") == "1", e.get("alpha") == "1"
    checks = []

    def check(what, ok):
        checks.append((what, bool(ok)))

    with tifffile.TiffFile(path) as tf:
        page = tf.pages[0]
        h, w = page.imagelength, page.imagewidth
        check("tifffile bigtiff", tf.is_bigtiff == big)
        check("tifffile dtype", page.dtype == dtype)
        check("tifffile bands", page.samplesperpixel == bands)
        check("tifffile deflate", page.compression == 8)
        check("tifffile predictor", page.predictor == pred)
        check("tifffile tiled", page.is_tiled and page.tilewidth == block and page.tilelength == block)
        check("tifffile extrasamples", tuple(page.extrasamples) == ((2,) if alpha else (0,) if bands == 4 else ()))
        pixels_tf = page.asarray()
        geo = tf.geotiff_metadata
        code = geo.get("ProjectedCSTypeGeoKey", geo.get("GeographicTypeGeoKey"))
        check("tifffile geokey EPSG", int(code) == (32632 if kind == "dem" else 4326))

    raw = np.fromfile(f"{folder}/{name}.raw", dtype=dtype.newbyteorder("<")).reshape(h, w, bands)
    check("tifffile pixels == generator", np.array_equal(pixels_tf.reshape(h, w, bands), raw))

    if kind == "dem":
        want = (323910.0, 23040.0 / w, 0.0, 5092200.0, 0.0, -23040.0 / h)
        want_nodata = -32768.0 if dtype.kind in "if" else 0.0
    else:
        want = (6.7264, 0.3072 / w, 0.0, 45.9752, 0.0, -0.2304 / h)
        want_nodata = None
    with rasterio.open(path) as ds:
        st = ds.tags(ns="IMAGE_STRUCTURE")
        check("rasterio dtype", all(d == dtype.name for d in ds.dtypes))
        check("rasterio bands", ds.count == bands)
        check("rasterio deflate", st.get("COMPRESSION") == "DEFLATE")
        check("rasterio predictor", st.get("PREDICTOR", "1") == str(pred))
        check("rasterio tiled", ds.block_shapes == [(block, block)] * bands)
        check("rasterio EPSG", ds.crs is not None and ds.crs.to_epsg() == (32632 if kind == "dem" else 4326))
        check("rasterio geotransform", np.allclose(ds.transform.to_gdal(), want, rtol=0, atol=1e-9))
        check("rasterio nodata", ds.nodata == want_nodata)
        if alpha:
            check("rasterio alpha band", ds.colorinterp[3] == ColorInterp.alpha)
        if bands >= 3:
            check("rasterio RGB", tuple(ds.colorinterp[:3]) == (ColorInterp.red, ColorInterp.green, ColorInterp.blue))
        pixels_rio = np.moveaxis(ds.read(), 0, -1)
        check("rasterio pixels == generator", np.array_equal(pixels_rio, raw))
        if kind == "dem":
            valid = raw[raw != want_nodata]
            check("elevations in 900..4800", valid.min() >= 900 and valid.max() <= 4800 and (raw == want_nodata).any())

    bad = [c for c, ok in checks if not ok]
    summary = (f"{name}.tif {w}x{h}x{bands} {dtype.name} pred {pred} block {block} {'BigTIFF' if big else 'TIFF'}: "
               f"{len(checks) - len(bad)}/{len(checks)} checks")
    print(summary)
    assert not bad, f"{summary}; failed: {', '.join(bad)}"
