"""PROJ itself, reached through ctypes on the system's libproj (Debian libproj25), so the checks
compare tilepack with the same library and the same proj.db the machine has (pyproj ships its
own PROJ and its own proj.db, which may hold another EPSG version).

    with Context() as ctx:                      # or Context(database="/path/proj.db")
        crs = ctx.create("EPSG:2056")
        op = ctx.crs_to_crs(crs.geodetic_crs(), crs)        # normalised: lon/lat → x/y
        x, y = op.trans(lon, lat)                           # numpy float64 arrays, NaN = no image
        lon2, lat2 = op.trans(x, y, inverse=True)
        pairs = op.trans([(7.4, 46.9)])                     # or pairs in, pairs out (inf = none)
        helmert = ctx.operation(1314)                       # one EPSG operation, always_xy
        op.last_used().info()["description"], op.last_used().accuracy()   # what answered

Failures to create an object raise ProjError with PROJ's own message (its log line and errno
text). Points PROJ cannot transform come back as NaN (PROJ's HUGE_VAL), never as an exception.
Objects are freed when their Python wrapper is collected or the context closes; a context and
its objects belong to one thread (PROJ's rule).

Cost: loading the library once per process; each `create` is a proj.db query (about 1 ms);
`crs_to_crs` builds the operation (a few ms); `trans` is PROJ's per-point cost, no Python loop.
"""
import ctypes
import ctypes.util
import os

import numpy as np

_LIB_NAMES = ("libproj.so.25", ctypes.util.find_library("proj") or "libproj.so")

PJ_FWD, PJ_IDENT, PJ_INV = 1, 0, -1
PJ_CATEGORY_CRS = 3
_HUGE = 1e300  # PROJ writes HUGE_VAL (inf) for a point it cannot transform


class ProjError(Exception):
    """A PROJ call failed; the message is PROJ's (log line, then errno text)."""


class _PJInfo(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("release", ctypes.c_char_p), ("version", ctypes.c_char_p), ("searchpath", ctypes.c_char_p),
                ("paths", ctypes.POINTER(ctypes.c_char_p)), ("path_count", ctypes.c_size_t)]


class _PJObjInfo(ctypes.Structure):
    _fields_ = [("id", ctypes.c_char_p), ("description", ctypes.c_char_p), ("definition", ctypes.c_char_p),
                ("has_inverse", ctypes.c_int), ("accuracy", ctypes.c_double)]


_LOG_FUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


def _load():
    last = None
    for name in _LIB_NAMES:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            last = e
    else:
        raise ProjError(f"libproj not found ({last}); install Debian's libproj25")
    P, D, S, I, CP = ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
    sigs = {
        "proj_info": (_PJInfo, []),
        "proj_context_create": (P, []),
        "proj_context_destroy": (P, [P]),
        "proj_context_set_database_path": (I, [P, CP, P, P]),
        "proj_context_get_database_path": (CP, [P]),
        "proj_context_get_database_metadata": (CP, [P, CP]),
        "proj_log_func": (None, [P, P, _LOG_FUNC]),
        "proj_log_level": (I, [P, I]),
        "proj_context_errno": (I, [P]),
        "proj_context_errno_string": (CP, [P, I]),
        "proj_errno": (I, [P]),
        "proj_errno_reset": (I, [P]),
        "proj_create": (P, [P, CP]),
        "proj_create_from_database": (P, [P, CP, CP, I, I, P]),
        "proj_create_crs_to_crs": (P, [P, CP, CP, P]),
        "proj_create_crs_to_crs_from_pj": (P, [P, P, P, P, P]),
        "proj_normalize_for_visualization": (P, [P, P]),
        "proj_destroy": (P, [P]),
        "proj_get_name": (CP, [P]),
        "proj_get_id_code": (CP, [P, I]),
        "proj_pj_info": (_PJObjInfo, [P]),
        "proj_is_deprecated": (I, [P]),
        "proj_get_area_of_use": (I, [P, P, D, D, D, D, ctypes.POINTER(CP)]),
        "proj_crs_get_geodetic_crs": (P, [P, P]),
        "proj_crs_get_coordoperation": (P, [P, P]),
        "proj_coordoperation_get_accuracy": (ctypes.c_double, [P, P]),
        "proj_crs_get_coordinate_system": (P, [P, P]),
        "proj_get_prime_meridian": (P, [P, P]),
        "proj_prime_meridian_get_parameters": (I, [P, P, D, D, ctypes.POINTER(CP)]),
        "proj_cs_get_axis_count": (I, [P, P]),
        "proj_cs_get_axis_info": (I, [P, P, I, ctypes.POINTER(CP), ctypes.POINTER(CP), ctypes.POINTER(CP), D,
                                      ctypes.POINTER(CP), ctypes.POINTER(CP), ctypes.POINTER(CP)]),
        "proj_coordoperation_get_method_info": (I, [P, P, ctypes.POINTER(CP), ctypes.POINTER(CP), ctypes.POINTER(CP)]),
        "proj_trans_generic": (S, [P, I, D, S, S, D, S, S, D, S, S, D, S, S]),
        "proj_create_operation_factory_context": (P, [P, CP]),
        "proj_operation_factory_context_destroy": (None, [P]),
        "proj_operation_factory_context_set_spatial_criterion": (None, [P, P, I]),
        "proj_operation_factory_context_set_grid_availability_use": (None, [P, P, I]),
        "proj_create_operations": (P, [P, P, P, P]),
        "proj_list_get_count": (I, [P]),
        "proj_list_get": (P, [P, P, I]),
        "proj_list_destroy": (None, [P]),
        "proj_as_proj_string": (CP, [P, P, I, P]),
        "proj_coordoperation_get_grid_used_count": (I, [P, P]),
        "proj_coordoperation_get_grid_used": (I, [P, P, I, ctypes.POINTER(CP), ctypes.POINTER(CP), ctypes.POINTER(CP),
                                                  ctypes.POINTER(CP), ctypes.POINTER(I), ctypes.POINTER(I),
                                                  ctypes.POINTER(I)]),
    }
    for fn, (res, args) in sigs.items():
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    if hasattr(lib, "proj_trans_get_last_used_operation"):  # PROJ >= 9.1
        lib.proj_trans_get_last_used_operation.restype = P
        lib.proj_trans_get_last_used_operation.argtypes = [P]
    return lib


_lib = None


def lib():
    """The loaded libproj (loaded on first use)."""
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def version():
    """PROJ's version string, e.g. '9.1.1'."""
    return lib().proj_info().version.decode()


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


class Context:
    """One PJ_CONTEXT. `database` points PROJ at another proj.db (an error if PROJ refuses it)."""

    def __init__(self, database=None):
        L = lib()
        self._ptr = L.proj_context_create()
        if not self._ptr:
            raise ProjError("proj_context_create failed")
        self._log = []
        # PROJ reports why a call failed through its logger; keep the lines for ProjError.
        self._log_cb = _LOG_FUNC(lambda _app, _level, msg: self._log.append(_s(msg)))
        L.proj_log_func(self._ptr, None, self._log_cb)
        L.proj_log_level(self._ptr, 1)  # PJ_LOG_ERROR: errors only
        self._objects = []
        if database is not None:
            if not L.proj_context_set_database_path(self._ptr, os.fsencode(database), None, None):
                self._fail(f"proj_context_set_database_path({database})")

    # -- errors -------------------------------------------------------------------------------
    def _fail(self, what):
        L = lib()
        err = L.proj_context_errno(self._ptr)
        text = _s(L.proj_context_errno_string(self._ptr, err)) if err else None
        detail = "; ".join(m for m in [self._log[-1] if self._log else None, text] if m)
        self._log.clear()
        raise ProjError(f"{what}: {detail or 'PROJ gave no reason'}")

    def _wrap(self, ptr, what):
        if not ptr:
            self._fail(what)
        self._log.clear()
        pj = PJ(self, ptr)
        self._objects.append(pj)
        return pj

    # -- lifetime -----------------------------------------------------------------------------
    def close(self):
        if self._ptr:
            for o in self._objects:
                o.destroy()
            self._objects.clear()
            lib().proj_context_destroy(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- database -----------------------------------------------------------------------------
    @property
    def database_path(self):
        return _s(lib().proj_context_get_database_path(self._ptr))

    def database_metadata(self, key):
        """A proj.db metadata value, e.g. 'EPSG.VERSION' → 'v10.076'."""
        return _s(lib().proj_context_get_database_metadata(self._ptr, key.encode()))

    # -- objects ------------------------------------------------------------------------------
    def create(self, definition):
        """proj_create: "EPSG:2056", a PROJ string, WKT, PROJJSON."""
        return self._wrap(lib().proj_create(self._ptr, definition.encode()), f"proj_create({definition!r})")

    def crs_from_database(self, auth, code):
        return self._wrap(lib().proj_create_from_database(self._ptr, auth.encode(), str(code).encode(),
                                                          PJ_CATEGORY_CRS, 0, None),
                          f"proj_create_from_database({auth}:{code})")

    def operation(self, code, authority="EPSG", normalize=True):
        """One registered coordinate operation (e.g. EPSG 1314), always_xy unless told not."""
        op = self.create(f"urn:ogc:def:coordinateOperation:{authority}::{code}")
        if not normalize:
            return op
        return self._wrap(lib().proj_normalize_for_visualization(self._ptr, op._ptr),
                          f"proj_normalize_for_visualization({op.name()!r})")

    def operations(self, source, target, spatial="intersects", grids="sort"):
        """Every candidate operation source → target (CRS definitions or PJs), in PROJ's order
        of preference (what `projinfo -s -t --spatial-test intersects` lists). `grids`: "sort"
        (operations whose grids are missing come last, PROJ's default), "discard" (left out),
        "ignore", "available" (treated as present). Not normalised (the CRSs' own axis order)."""
        L = lib()
        source = source if isinstance(source, PJ) else self.create(source)
        target = target if isinstance(target, PJ) else self.create(target)
        f = L.proj_create_operation_factory_context(self._ptr, None)
        if not f:
            self._fail("proj_create_operation_factory_context")
        try:
            # PROJ_SPATIAL_CRITERION_STRICT_CONTAINMENT 0 / PARTIAL_INTERSECTION 1
            L.proj_operation_factory_context_set_spatial_criterion(self._ptr, f, {"contains": 0, "intersects": 1}[spatial])
            # PROJ_GRID_AVAILABILITY_USED_FOR_SORTING 0, DISCARD_OPERATION_IF_MISSING_GRID 1,
            # IGNORED 2, KNOWN_AVAILABLE 3
            L.proj_operation_factory_context_set_grid_availability_use(
                self._ptr, f, {"sort": 0, "discard": 1, "ignore": 2, "available": 3}[grids])
            lst = L.proj_create_operations(self._ptr, source._ptr, target._ptr, f)
            if not lst:
                self._fail(f"proj_create_operations({source.name()!r}, {target.name()!r})")
            try:
                return [self._wrap(L.proj_list_get(self._ptr, lst, i), "proj_list_get")
                        for i in range(L.proj_list_get_count(lst))]
            finally:
                L.proj_list_destroy(lst)
        finally:
            L.proj_operation_factory_context_destroy(f)

    def error(self):
        """PROJ's text for the context's current errno."""
        err = lib().proj_context_errno(self._ptr)
        return _s(lib().proj_context_errno_string(self._ptr, err)) or f"PROJ error {err}"

    def crs_to_crs(self, source, target, normalize=True):
        """The operation source → target (each a definition string or a PJ), normalised for
        visualisation (lon/lat, x/y order: PROJ's always_xy) unless `normalize` is False."""
        L = lib()
        if isinstance(source, PJ) != isinstance(target, PJ):  # one of each: both as objects
            source = source if isinstance(source, PJ) else self.create(source)
            target = target if isinstance(target, PJ) else self.create(target)
        if isinstance(source, PJ):
            op = self._wrap(L.proj_create_crs_to_crs_from_pj(self._ptr, source._ptr, target._ptr, None, None),
                            f"proj_create_crs_to_crs_from_pj({source.name()!r}, {target.name()!r})")
        else:
            op = self._wrap(L.proj_create_crs_to_crs(self._ptr, str(source).encode(), str(target).encode(), None),
                            f"proj_create_crs_to_crs({source!r}, {target!r})")
        if not normalize:
            return op
        return self._wrap(L.proj_normalize_for_visualization(self._ptr, op._ptr),
                          f"proj_normalize_for_visualization({op.name()!r})")


class PJ:
    """A PROJ object (CRS or operation) owned by a Context."""

    def __init__(self, ctx, ptr):
        self.ctx, self._ptr = ctx, ptr

    def destroy(self):
        if self._ptr:
            lib().proj_destroy(self._ptr)
            self._ptr = None

    close = destroy

    def name(self):
        return _s(lib().proj_get_name(self._ptr))

    def code(self):
        """The object's identifier code in its authority ('2056'), or None."""
        return _s(lib().proj_get_id_code(self._ptr, 0))

    def info(self):
        """proj_pj_info: {id, description, definition, has_inverse, accuracy}."""
        i = lib().proj_pj_info(self._ptr)
        return {"id": _s(i.id), "description": _s(i.description), "definition": _s(i.definition),
                "has_inverse": bool(i.has_inverse), "accuracy": i.accuracy}

    def last_used(self):
        """Which of proj_create_crs_to_crs's candidate operations answered the last point
        (PROJ ≥ 9.1); the object itself when it is a single operation."""
        f = getattr(lib(), "proj_trans_get_last_used_operation", None)
        h = f(self._ptr) if f else None
        return self.ctx._wrap(h, "proj_trans_get_last_used_operation") if h else self

    @property
    def deprecated(self):
        return bool(lib().proj_is_deprecated(self._ptr))

    def area_of_use(self):
        """(west, south, east, north, name) in Greenwich degrees; west > east when the area
        crosses the antimeridian. None when the object has none."""
        w, s, e, n = (ctypes.c_double() for _ in range(4))
        name = ctypes.c_char_p()
        if not lib().proj_get_area_of_use(self.ctx._ptr, self._ptr, ctypes.byref(w), ctypes.byref(s),
                                          ctypes.byref(e), ctypes.byref(n), ctypes.byref(name)):
            return None
        return w.value, s.value, e.value, n.value, _s(name.value)

    def geodetic_crs(self):
        """The CRS's base geodetic (geographic) CRS."""
        return self.ctx._wrap(lib().proj_crs_get_geodetic_crs(self.ctx._ptr, self._ptr),
                              f"proj_crs_get_geodetic_crs({self.name()!r})")

    def coordinate_operation(self):
        """A projected CRS's deriving conversion."""
        return self.ctx._wrap(lib().proj_crs_get_coordoperation(self.ctx._ptr, self._ptr),
                              f"proj_crs_get_coordoperation({self.name()!r})")

    def accuracy(self):
        """An operation's accuracy in metres as proj.db states it; -1 when unknown (PROJ's)."""
        return lib().proj_coordoperation_get_accuracy(self.ctx._ptr, self._ptr)

    def proj_string(self):
        """The object as a PROJ (5) string, e.g. an operation's +proj=pipeline; None if PROJ
        cannot say it in one."""
        return _s(lib().proj_as_proj_string(self.ctx._ptr, self._ptr, 0, None))  # PJ_PROJ_5

    def grids(self):
        """[{short_name, full_name, available}] of the grids an operation uses."""
        L, c = lib(), self.ctx._ptr
        out = []
        for i in range(L.proj_coordoperation_get_grid_used_count(c, self._ptr)):
            short, full, pkg, url = (ctypes.c_char_p() for _ in range(4))
            direct, lic, avail = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            if L.proj_coordoperation_get_grid_used(c, self._ptr, i, ctypes.byref(short), ctypes.byref(full),
                                                   ctypes.byref(pkg), ctypes.byref(url), ctypes.byref(direct),
                                                   ctypes.byref(lic), ctypes.byref(avail)):
                out.append({"short_name": _s(short.value), "full_name": _s(full.value) or None,
                            "available": bool(avail.value)})
        return out

    def method(self):
        """(method name, authority, code) of an operation, e.g. ('Krovak', 'EPSG', '9819')."""
        n, a, c = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
        if not lib().proj_coordoperation_get_method_info(self.ctx._ptr, self._ptr, ctypes.byref(n),
                                                         ctypes.byref(a), ctypes.byref(c)):
            self.ctx._fail(f"proj_coordoperation_get_method_info({self.name()!r})")
        return _s(n.value), _s(a.value), _s(c.value)

    def prime_meridian_degrees(self):
        """Greenwich longitude of a geodetic CRS's prime meridian, in degrees."""
        pm = self.ctx._wrap(lib().proj_get_prime_meridian(self.ctx._ptr, self._ptr),
                            f"proj_get_prime_meridian({self.name()!r})")
        lon, factor = ctypes.c_double(), ctypes.c_double()
        if not lib().proj_prime_meridian_get_parameters(self.ctx._ptr, pm._ptr, ctypes.byref(lon),
                                                        ctypes.byref(factor), None):
            self.ctx._fail(f"proj_prime_meridian_get_parameters({pm.name()!r})")
        return float(np.degrees(lon.value * factor.value))

    def axes(self):
        """[(name, abbreviation, direction, unit factor to SI (metre/radian), unit name)] of a
        CRS's coordinate system, in the CRS's own axis order."""
        L, c = lib(), self.ctx._ptr
        cs = self.ctx._wrap(L.proj_crs_get_coordinate_system(c, self._ptr),
                            f"proj_crs_get_coordinate_system({self.name()!r})")
        out = []
        for i in range(L.proj_cs_get_axis_count(c, cs._ptr)):
            name, abbr, direc, uname, uauth, ucode = (ctypes.c_char_p() for _ in range(6))
            factor = ctypes.c_double()
            if not L.proj_cs_get_axis_info(c, cs._ptr, i, ctypes.byref(name), ctypes.byref(abbr), ctypes.byref(direc),
                                           ctypes.byref(factor), ctypes.byref(uname), ctypes.byref(uauth),
                                           ctypes.byref(ucode)):
                self.ctx._fail(f"proj_cs_get_axis_info({self.name()!r}, {i})")
            out.append((_s(name.value), _s(abbr.value), _s(direc.value), factor.value, _s(uname.value)))
        return out

    def trans(self, x, y=None, inverse=False):
        """proj_trans_generic over copies of x and y (float64): returns (x', y') with NaN where
        PROJ could not transform the point. Given one list of (x, y) pairs instead, returns a
        list of pairs with PROJ's own inf where it could not."""
        if y is None:
            pts = np.array(x, dtype=np.float64).reshape(-1, 2)
            xs, ys = self._trans(pts[:, 0].copy(), pts[:, 1].copy(), inverse)
            return list(zip(xs.tolist(), ys.tolist()))
        xs, ys = self._trans(np.array(x, dtype=np.float64, copy=True).ravel(),
                             np.array(y, dtype=np.float64, copy=True).ravel(), inverse)
        bad = ~(np.isfinite(xs) & np.isfinite(ys)) | (np.abs(xs) > _HUGE) | (np.abs(ys) > _HUGE)
        xs[bad] = np.nan
        ys[bad] = np.nan
        return xs, ys

    def _trans(self, xs, ys, inverse):
        if xs.shape != ys.shape:
            raise ValueError("x and y differ in length")
        n = xs.size
        D = ctypes.POINTER(ctypes.c_double)
        L = lib()
        L.proj_errno_reset(self._ptr)
        if n:
            L.proj_trans_generic(self._ptr, PJ_INV if inverse else PJ_FWD,
                                 xs.ctypes.data_as(D), 8, n, ys.ctypes.data_as(D), 8, n,
                                 None, 0, 0, None, 0, 0)
        L.proj_errno_reset(self._ptr)  # per-point failures are the NaNs, not an error of the object
        return xs, ys


class Proj(Context):
    """Context under the name checks/test_datum_check.py knew first: Proj(proj_db=PATH)."""

    def __init__(self, library=None, proj_db=None):
        super().__init__(database=proj_db)
