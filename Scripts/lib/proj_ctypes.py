"""PROJ itself (libproj.so.25, Debian's PROJ 9.1) through ctypes, for the checks: the same
library and proj.db that cs2cs uses, without pyproj's bundled copies.

    with Proj() as proj:                                   # PROJ_DATA / proj.db as PROJ finds them
        op = proj.crs_to_crs("EPSG:4314", "EPSG:4326")     # always_xy (normalised) order
        helmert = proj.operation(1314)                     # one EPSG operation, always_xy
        out = op.trans([(10.0, 50.0)])                     # [(lon, lat)], inf where PROJ fails
        print(op.last_used().info()["description"], op.last_used().accuracy())
        op = proj.create("+proj=pipeline +step +proj=unitconvert +xy_in=deg +xy_out=rad "
                         "+step +proj=hgridshift +grids=BETA2007.gsb "
                         "+step +proj=unitconvert +xy_in=rad +xy_out=deg")

Errors are ProjError with PROJ's own message. Every object is freed with its context (close()
or the with block), before the context itself, as PROJ requires.
"""
import ctypes

PJ_FWD, PJ_INV = 1, -1


class ProjError(Exception):
    pass


class _PJInfo(ctypes.Structure):
    _fields_ = [("id", ctypes.c_char_p), ("description", ctypes.c_char_p), ("definition", ctypes.c_char_p),
                ("has_inverse", ctypes.c_int), ("accuracy", ctypes.c_double)]


def _load(name):
    lib = ctypes.CDLL(name)
    P = ctypes.c_void_p
    sig = {
        "proj_context_create": (P, []),
        "proj_context_destroy": (P, [P]),
        "proj_context_set_database_path": (ctypes.c_int, [P, ctypes.c_char_p, P, P]),
        "proj_context_errno": (ctypes.c_int, [P]),
        "proj_context_errno_string": (ctypes.c_char_p, [P, ctypes.c_int]),
        "proj_create": (P, [P, ctypes.c_char_p]),
        "proj_create_crs_to_crs": (P, [P, ctypes.c_char_p, ctypes.c_char_p, P]),
        "proj_normalize_for_visualization": (P, [P, P]),
        "proj_destroy": (P, [P]),
        "proj_trans_generic": (ctypes.c_size_t, [P, ctypes.c_int,
                                                 P, ctypes.c_size_t, ctypes.c_size_t,
                                                 P, ctypes.c_size_t, ctypes.c_size_t,
                                                 P, ctypes.c_size_t, ctypes.c_size_t,
                                                 P, ctypes.c_size_t, ctypes.c_size_t]),
        "proj_pj_info": (_PJInfo, [P]),
        "proj_coordoperation_get_accuracy": (ctypes.c_double, [P, P]),
        "proj_get_area_of_use": (ctypes.c_int, [P, P, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                                                ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                                                ctypes.POINTER(ctypes.c_char_p)]),
        "proj_crs_get_geodetic_crs": (P, [P, P]),
        "proj_get_id_code": (ctypes.c_char_p, [P, ctypes.c_int]),
        "proj_get_name": (ctypes.c_char_p, [P]),
    }
    for fn, (res, args) in sig.items():
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    # PROJ >= 9.1: which of create_crs_to_crs's candidate operations answered the last point.
    if hasattr(lib, "proj_trans_get_last_used_operation"):
        lib.proj_trans_get_last_used_operation.restype = P
        lib.proj_trans_get_last_used_operation.argtypes = [P]
    return lib


class PJ:
    """A PROJ object (CRS or coordinate operation) owned by a Proj context."""

    def __init__(self, proj, handle, what):
        if not handle:
            raise ProjError(f"{what}: {proj.error()}")
        self.proj, self.handle = proj, handle
        proj.objects.append(self)

    def close(self):
        if self.handle:
            self.proj.lib.proj_destroy(self.handle)
            self.handle = None

    def trans(self, points, inverse=False):
        """[(x, y)] → [(x, y)] through proj_trans_generic; inf where PROJ has no answer."""
        n = len(points)
        xs = (ctypes.c_double * n)(*[float(p[0]) for p in points])
        ys = (ctypes.c_double * n)(*[float(p[1]) for p in points])
        d = ctypes.sizeof(ctypes.c_double)
        self.proj.lib.proj_trans_generic(self.handle, PJ_INV if inverse else PJ_FWD, xs, d, n, ys, d, n,
                                         None, 0, 0, None, 0, 0)
        return list(zip(xs, ys))

    def info(self):
        i = self.proj.lib.proj_pj_info(self.handle)
        dec = lambda b: b.decode() if b else None
        return {"id": dec(i.id), "description": dec(i.description), "definition": dec(i.definition),
                "has_inverse": bool(i.has_inverse), "accuracy": i.accuracy}

    def accuracy(self):
        """Metres as PROJ states them for an operation (-1: unknown)."""
        return self.proj.lib.proj_coordoperation_get_accuracy(self.proj.ctx, self.handle)

    def last_used(self):
        """The operation create_crs_to_crs's object used for the last point (PROJ >= 9.1), else itself."""
        if not hasattr(self.proj.lib, "proj_trans_get_last_used_operation"):
            return self
        h = self.proj.lib.proj_trans_get_last_used_operation(self.handle)
        return PJ(self.proj, h, "proj_trans_get_last_used_operation") if h else self

    def area_of_use(self):
        """(west, south, east, north, name) in degrees, or None."""
        w, s, e, n = (ctypes.c_double() for _ in range(4))
        name = ctypes.c_char_p()
        if not self.proj.lib.proj_get_area_of_use(self.proj.ctx, self.handle, ctypes.byref(w), ctypes.byref(s),
                                                   ctypes.byref(e), ctypes.byref(n), ctypes.byref(name)):
            return None
        return w.value, s.value, e.value, n.value, (name.value or b"").decode()

    def geodetic_crs(self):
        return PJ(self.proj, self.proj.lib.proj_crs_get_geodetic_crs(self.proj.ctx, self.handle), "proj_crs_get_geodetic_crs")

    def code(self):
        c = self.proj.lib.proj_get_id_code(self.handle, 0)
        return c.decode() if c else None

    def name(self):
        n = self.proj.lib.proj_get_name(self.handle)
        return n.decode() if n else None


class Proj:
    """A PROJ context; `proj_db` pins the database (default: PROJ's own search)."""

    def __init__(self, library="libproj.so.25", proj_db=None):
        self.lib = _load(library)
        self.ctx = self.lib.proj_context_create()
        self.objects = []
        if proj_db and not self.lib.proj_context_set_database_path(self.ctx, proj_db.encode(), None, None):
            raise ProjError(f"{proj_db}: {self.error()}")

    def error(self):
        code = self.lib.proj_context_errno(self.ctx)
        text = self.lib.proj_context_errno_string(self.ctx, code)
        return text.decode() if text else f"PROJ error {code}"

    def create(self, definition):
        return PJ(self, self.lib.proj_create(self.ctx, definition.encode()), f"proj_create({definition!r})")

    def operation(self, code, authority="EPSG", normalize=True):
        """One registered coordinate operation (e.g. 1314), in always_xy order unless told not."""
        op = self.create(f"urn:ogc:def:coordinateOperation:{authority}::{code}")
        if not normalize:
            return op
        return PJ(self, self.lib.proj_normalize_for_visualization(self.ctx, op.handle), "proj_normalize_for_visualization")

    def crs_to_crs(self, source, target, normalize=True):
        op = PJ(self, self.lib.proj_create_crs_to_crs(self.ctx, source.encode(), target.encode(), None),
                f"proj_create_crs_to_crs({source}, {target})")
        if not normalize:
            return op
        return PJ(self, self.lib.proj_normalize_for_visualization(self.ctx, op.handle), "proj_normalize_for_visualization")

    def close(self):
        for o in self.objects:
            o.close()
        self.objects = []
        if self.ctx:
            self.lib.proj_context_destroy(self.ctx)
            self.ctx = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
