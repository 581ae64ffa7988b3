/* The compiled timing core: CorePipes, the pipes inside one core, in C.
 *
 * The reference is pypto_sim_a2a3/hw/corepipes.py; this type has the same constructor, methods and
 * results (the same (start, ready) per op, the same slices in the same order, the same stall
 * reasons), and tests/test_engines_agree.py and packages/pypto-sim-a2a3/tests/test_compiled_core.py
 * hold it to that. What differs is only how the state is kept: the byte-range records of each
 * on-chip space are a sorted C array, the pipes are small integers, and the description of what an
 * op waited for is made only when a stall slice is recorded.
 *
 * Read corepipes.py first: the comments here say where the C keeps the Python's order of events.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdlib.h>
#include <string.h>

typedef long long cyc; /* a modeled cycle, or a byte address */

/* What last happened to one byte range (corepipes._Use); writer and reader are pipe ids, 0 = "". */
typedef struct {
    cyc lo, hi;
    cyc written, read;
    cyc claim; /* (claim, place): the order records of a space are searched in */
    Py_ssize_t place;
    int writer, reader;
} Use;

/* The records of one on-chip space, sorted by address, never overlapping (corepipes._Ranges). */
typedef struct {
    PyObject *space; /* the MemorySpace member (enum members are singletons: compared by identity) */
    Use *uses;
    Py_ssize_t n, cap;
} Ranges;

typedef struct {
    cyc written, read;
    int writer, reader;
} GmUse;

/* The dependency that binds an op (corepipes.Dependency, made only when it must be described). */
typedef struct {
    int kind;         /* 0: none; 1: one of ``after``; 2: a pipe of this core */
    PyObject *dep;    /* kind 1: the Dependency (borrowed from ``after``) */
    cyc at;           /* when the op may start because of it */
    cyc ready;        /* kind 2: when the producing op's result was ready */
    int producer;     /* kind 2: the producing pipe */
    int what;         /* kind 2: 0 data, 1 read, 2 written */
    PyObject *space;  /* kind 2: the op's region's space (NULL: a GM tensor) */
} Binding;

typedef struct {
    PyObject_HEAD
    PyObject *core;
    PyObject *recorder;
    cyc flag_cycles;
    PyObject *pipe_names; /* list: pipe id -> its name; 0 is "" */
    PyObject *pipe_ids;   /* dict: name -> pipe id */
    cyc *free;            /* per pipe id: when it is free */
    char *used;           /* per pipe id: whether ``free`` holds it */
    int *order;           /* the pipe ids in the order ``free`` got them */
    Py_ssize_t nused, cap_pipes;
    Ranges *spaces;
    Py_ssize_t nspaces;
    PyObject *gm_index; /* dict: storage address -> index into gm */
    GmUse *gm;
    Py_ssize_t ngm, cap_gm;
    cyc claims;
    Py_ssize_t *scratch; /* the indices _overlapping found */
    Py_ssize_t cap_scratch;
    PyObject *weakreflist;
} CorePipes;

/* ------------------------------------------------------------------ module state */

static PyObject *Slice;      /* pypto.ir.backend.Slice */
static PyObject *STALL;      /* pypto.ir.backend.STALL */
static PyObject *empty_tuple;
static PyObject *s_core, *s_start, *s_cycles, *s_name, *s_unit, *s_task, *s_source, *s_peak_cycles,
    *s_roof, *s_pipe, *s_flag_from, *s_flag_at, *s_at, *s_what, *s_ready, *s_pipelined, *s_op, *s_span,
    *s_file, *s_line, *s_record, *s_untyped_storage, *s_data_ptr, *s_space, *s_lo, *s_hi;

/* ------------------------------------------------------------------ small helpers */

static int grow(void **items, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t cap2 = *cap ? *cap : 8;
    while (cap2 < need) cap2 *= 2;
    void *grown = PyMem_Realloc(*items, (size_t)cap2 * size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = grown;
    *cap = cap2;
    return 0;
}

static int as_cyc(PyObject *value, cyc *out) {
    cyc found = PyLong_AsLongLong(value);
    if (found == -1 && PyErr_Occurred()) return -1;
    *out = found;
    return 0;
}

static int attr_cyc(PyObject *obj, PyObject *name, cyc *out) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) return -1;
    int failed = as_cyc(value, out);
    Py_DECREF(value);
    return failed;
}

/* The id of pipe ``name`` (made at its first sight when ``make``; -1 if unknown and not made). */
static int pipe_id(CorePipes *self, PyObject *name, int make) {
    PyObject *found = PyDict_GetItemWithError(self->pipe_ids, name);
    if (found != NULL) return (int)PyLong_AsLong(found);
    if (PyErr_Occurred()) return -2;
    if (!make) return -1;
    Py_ssize_t id = PyList_GET_SIZE(self->pipe_names);
    PyObject *key = PyLong_FromSsize_t(id);
    if (key == NULL) return -2;
    if (PyDict_SetItem(self->pipe_ids, name, key) < 0 || PyList_Append(self->pipe_names, name) < 0) {
        Py_DECREF(key);
        return -2;
    }
    Py_DECREF(key);
    if (id >= self->cap_pipes) {
        Py_ssize_t old = self->cap_pipes, cap = old ? old * 2 : 8;
        while (cap <= id) cap *= 2;
        cyc *free_at = PyMem_Realloc(self->free, (size_t)cap * sizeof(cyc));
        if (free_at == NULL) goto nomemory;
        self->free = free_at;
        char *used = PyMem_Realloc(self->used, (size_t)cap);
        if (used == NULL) goto nomemory;
        self->used = used;
        int *order = PyMem_Realloc(self->order, (size_t)cap * sizeof(int));
        if (order == NULL) goto nomemory;
        self->order = order;
        for (Py_ssize_t i = old; i < cap; i++) {
            self->free[i] = 0;
            self->used[i] = 0;
        }
        self->cap_pipes = cap;
    }
    return (int)id;
nomemory:
    PyErr_NoMemory();
    return -2;
}

static PyObject *pipe_name(CorePipes *self, int id) {
    return PyList_GET_ITEM(self->pipe_names, id); /* borrowed */
}

/* A region ``Region(space, lo, hi)`` (or any object with those three fields). */
typedef struct {
    PyObject *space; /* borrowed */
    cyc lo, hi;
} Reg;

static int as_reg(PyObject *region, Reg *out) {
    if (PyTuple_Check(region) && PyTuple_GET_SIZE(region) == 3) {
        out->space = PyTuple_GET_ITEM(region, 0);
        if (as_cyc(PyTuple_GET_ITEM(region, 1), &out->lo) < 0) return -1;
        return as_cyc(PyTuple_GET_ITEM(region, 2), &out->hi);
    }
    PyObject *space = PyObject_GetAttr(region, s_space);
    if (space == NULL) return -1;
    out->space = space;
    Py_DECREF(space); /* the region holds it */
    if (attr_cyc(region, s_lo, &out->lo) < 0) return -1;
    return attr_cyc(region, s_hi, &out->hi);
}

static Ranges *ranges_of(CorePipes *self, PyObject *space, int make) {
    for (Py_ssize_t i = 0; i < self->nspaces; i++)
        if (self->spaces[i].space == space) return &self->spaces[i];
    if (!make) return NULL;
    Ranges *grown = PyMem_Realloc(self->spaces, (size_t)(self->nspaces + 1) * sizeof(Ranges));
    if (grown == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    self->spaces = grown;
    Ranges *ranges = &self->spaces[self->nspaces++];
    Py_INCREF(space);
    ranges->space = space;
    ranges->uses = NULL;
    ranges->n = ranges->cap = 0;
    return ranges;
}

/* corepipes._Ranges.span: the records [first, stop) that share a byte with [lo, hi). */
static void span(Ranges *ranges, cyc lo, cyc hi, Py_ssize_t *first_out, Py_ssize_t *stop_out) {
    Py_ssize_t a = 0, b = ranges->n;
    while (a < b) { /* bisect_right(starts, lo) */
        Py_ssize_t mid = (a + b) / 2;
        if (lo < ranges->uses[mid].lo) b = mid;
        else a = mid + 1;
    }
    Py_ssize_t first = a - 1;
    if (first < 0 || ranges->uses[first].hi <= lo) first += 1;
    a = 0;
    b = ranges->n;
    while (a < b) { /* bisect_left(starts, hi) */
        Py_ssize_t mid = (a + b) / 2;
        if (ranges->uses[mid].lo < hi) a = mid + 1;
        else b = mid;
    }
    *first_out = first;
    *stop_out = a > first ? a : first;
}

/* For sorting what _overlapping finds by (claim, place, lo), as the Python's stable sort does. */
typedef struct {
    cyc claim;
    Py_ssize_t place;
    cyc lo;
    Py_ssize_t index;
} Key;

static int by_claim(const void *x, const void *y) {
    const Key *a = x, *b = y;
    if (a->claim != b->claim) return a->claim < b->claim ? -1 : 1;
    if (a->place != b->place) return a->place < b->place ? -1 : 1;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return a->index < b->index ? -1 : (a->index > b->index);
}

/* corepipes.CorePipes._overlapping: the indices of the records sharing a byte with ``reg``, in
 * self->scratch, in search order; their number (-1 on error). */
static Py_ssize_t overlapping(CorePipes *self, Reg *reg, Ranges **ranges_out) {
    Ranges *ranges = ranges_of(self, reg->space, 0);
    *ranges_out = ranges;
    if (ranges == NULL) return PyErr_Occurred() ? -1 : 0;
    Py_ssize_t first, stop;
    span(ranges, reg->lo, reg->hi, &first, &stop);
    Py_ssize_t n = stop - first;
    if (grow((void **)&self->scratch, &self->cap_scratch, n, sizeof(Py_ssize_t)) < 0) return -1;
    if (n <= 1) {
        if (n == 1) self->scratch[0] = first;
        return n;
    }
    Key *keys = PyMem_Malloc((size_t)n * sizeof(Key));
    if (keys == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Use *u = &ranges->uses[first + i];
        keys[i] = (Key){u->claim, u->place, u->lo, first + i};
    }
    qsort(keys, (size_t)n, sizeof(Key), by_claim);
    for (Py_ssize_t i = 0; i < n; i++) self->scratch[i] = keys[i].index;
    PyMem_Free(keys);
    return n;
}

static Use cut(const Use *u, cyc lo, cyc hi) {
    Use piece = *u;
    piece.lo = lo;
    piece.hi = hi;
    return piece;
}

static Use fresh(cyc lo, cyc hi) {
    Use piece = {lo, hi, 0, 0, 0, 0, 0, 0};
    return piece;
}

/* corepipes.CorePipes._claim: the records of exactly [lo, hi) of ``space``, made so; their first
 * index in *first_out and their number (-1 on error). The records are contiguous. */
static Py_ssize_t claim(CorePipes *self, PyObject *space, cyc lo, cyc hi, Ranges **ranges_out,
                        Py_ssize_t *first_out) {
    Ranges *ranges = ranges_of(self, space, 1);
    if (ranges == NULL) return -1;
    *ranges_out = ranges;
    Py_ssize_t first, stop;
    span(ranges, lo, hi, &first, &stop);
    self->claims += 1;
    Py_ssize_t met = stop - first;
    /* before and after hold at most one piece per record met, filled at most two plus one. */
    Use *pieces = PyMem_Malloc((size_t)(4 * met + 1) * sizeof(Use));
    if (pieces == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Use *before = pieces, *after = pieces + met, *filled = pieces + 2 * met;
    Py_ssize_t nbefore = 0, nafter = 0, nfilled = 0;
    cyc at = lo;
    for (Py_ssize_t i = first; i < stop; i++) {
        Use *u = &ranges->uses[i];
        if (u->lo < lo) before[nbefore++] = cut(u, u->lo, lo);
        if (hi < u->hi) after[nafter++] = cut(u, hi, u->hi);
        Use inside;
        if (lo <= u->lo && u->hi <= hi) inside = *u;
        else inside = cut(u, u->lo > lo ? u->lo : lo, u->hi < hi ? u->hi : hi);
        if (at < inside.lo) filled[nfilled++] = fresh(at, inside.lo);
        filled[nfilled++] = inside;
        at = inside.hi;
    }
    if (at < hi) filled[nfilled++] = fresh(at, hi);
    for (Py_ssize_t place = 0; place < nfilled; place++) {
        filled[place].claim = self->claims;
        filled[place].place = place;
    }
    Py_ssize_t made = nbefore + nfilled + nafter;
    Py_ssize_t n = ranges->n - met + made;
    if (grow((void **)&ranges->uses, &ranges->cap, n, sizeof(Use)) < 0) {
        PyMem_Free(pieces);
        return -1;
    }
    memmove(&ranges->uses[first + made], &ranges->uses[stop], (size_t)(ranges->n - stop) * sizeof(Use));
    memcpy(&ranges->uses[first], before, (size_t)nbefore * sizeof(Use));
    memcpy(&ranges->uses[first + nbefore], filled, (size_t)nfilled * sizeof(Use));
    memcpy(&ranges->uses[first + nbefore + nfilled], after, (size_t)nafter * sizeof(Use));
    ranges->n = n;
    PyMem_Free(pieces);
    *first_out = first + nbefore;
    return nfilled;
}

/* corepipes._storage: ``tensor.untyped_storage().data_ptr()`` (a new reference). */
static PyObject *storage(PyObject *tensor) {
    PyObject *st = PyObject_CallMethodNoArgs(tensor, s_untyped_storage);
    if (st == NULL) return NULL;
    PyObject *ptr = PyObject_CallMethodNoArgs(st, s_data_ptr);
    Py_DECREF(st);
    return ptr;
}

/* The GM record of ``tensor``'s storage (NULL and no error if none, unless ``make``). */
static GmUse *gm_use(CorePipes *self, PyObject *tensor, int make) {
    PyObject *key = storage(tensor);
    if (key == NULL) return NULL;
    PyObject *found = PyDict_GetItemWithError(self->gm_index, key);
    if (found != NULL) {
        Py_ssize_t index = PyLong_AsSsize_t(found);
        Py_DECREF(key);
        return &self->gm[index];
    }
    if (PyErr_Occurred() || !make) {
        Py_DECREF(key);
        return NULL;
    }
    if (grow((void **)&self->gm, &self->cap_gm, self->ngm + 1, sizeof(GmUse)) < 0) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *index = PyLong_FromSsize_t(self->ngm);
    if (index == NULL || PyDict_SetItem(self->gm_index, key, index) < 0) {
        Py_XDECREF(index);
        Py_DECREF(key);
        return NULL;
    }
    Py_DECREF(index);
    Py_DECREF(key);
    GmUse *use = &self->gm[self->ngm++];
    use->written = use->read = 0;
    use->writer = use->reader = 0;
    return use;
}

/* ------------------------------------------------------------------ the type */

static int CorePipes_init(CorePipes *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"core", "recorder", "flag_cycles", NULL};
    PyObject *core, *recorder;
    long long flag_cycles;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOL", names, &core, &recorder, &flag_cycles)) return -1;
    Py_INCREF(core);
    Py_XSETREF(self->core, core);
    Py_INCREF(recorder);
    Py_XSETREF(self->recorder, recorder);
    self->flag_cycles = flag_cycles;
    /* A fresh start, also when __init__ runs again on the same object. */
    for (Py_ssize_t i = 0; i < self->nspaces; i++) {
        Py_CLEAR(self->spaces[i].space);
        PyMem_Free(self->spaces[i].uses);
    }
    PyMem_Free(self->spaces);
    self->spaces = NULL;
    self->nspaces = 0;
    for (Py_ssize_t i = 0; i < self->cap_pipes; i++) self->used[i] = 0;
    self->nused = 0;
    self->ngm = 0;
    self->claims = 0;
    Py_XSETREF(self->pipe_names, PyList_New(0));
    Py_XSETREF(self->pipe_ids, PyDict_New());
    Py_XSETREF(self->gm_index, PyDict_New());
    if (self->pipe_names == NULL || self->pipe_ids == NULL || self->gm_index == NULL) return -1;
    PyObject *empty = PyUnicode_FromString("");
    if (empty == NULL) return -1;
    int id = pipe_id(self, empty, 1); /* id 0: no pipe ("") */
    Py_DECREF(empty);
    return id < 0 ? -1 : 0;
}

static int CorePipes_traverse(CorePipes *self, visitproc visit, void *arg) {
    Py_VISIT(self->core);
    Py_VISIT(self->recorder);
    Py_VISIT(self->pipe_names);
    Py_VISIT(self->pipe_ids);
    Py_VISIT(self->gm_index);
    for (Py_ssize_t i = 0; i < self->nspaces; i++) Py_VISIT(self->spaces[i].space);
    return 0;
}

static int CorePipes_clear(CorePipes *self) {
    Py_CLEAR(self->core);
    Py_CLEAR(self->recorder);
    Py_CLEAR(self->pipe_names);
    Py_CLEAR(self->pipe_ids);
    Py_CLEAR(self->gm_index);
    for (Py_ssize_t i = 0; i < self->nspaces; i++) {
        Py_CLEAR(self->spaces[i].space);
        PyMem_Free(self->spaces[i].uses);
    }
    PyMem_Free(self->spaces);
    self->spaces = NULL;
    self->nspaces = 0;
    return 0;
}

static void CorePipes_dealloc(CorePipes *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    CorePipes_clear(self);
    PyMem_Free(self->free);
    PyMem_Free(self->used);
    PyMem_Free(self->order);
    PyMem_Free(self->gm);
    PyMem_Free(self->scratch);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ------------------------------------------------------------------ the state of the core */

/* Whether __init__ has run (a method of an object made by __new__ alone raises instead of crashing). */
static int initialized(CorePipes *self) {
    if (self->pipe_ids != NULL) return 1;
    PyErr_SetString(PyExc_RuntimeError, "CorePipes.__init__(core, recorder, flag_cycles) was not called");
    return 0;
}

static PyObject *CorePipes_drained(CorePipes *self, PyObject *args, PyObject *kwds) {
    if (!initialized(self)) return NULL;
    static char *names[] = {"pipes", NULL};
    PyObject *pipes = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:drained", names, &pipes)) return NULL;
    cyc best = 0;
    int any = 0;
    if (pipes == Py_None) {
        for (Py_ssize_t i = 0; i < self->nused; i++) {
            cyc at = self->free[self->order[i]];
            if (!any || at > best) best = at;
            any = 1;
        }
        return PyLong_FromLongLong(any ? best : 0);
    }
    PyObject *iter = PyObject_GetIter(pipes);
    if (iter == NULL) return NULL;
    PyObject *pipe;
    while ((pipe = PyIter_Next(iter)) != NULL) {
        int id = pipe_id(self, pipe, 0);
        Py_DECREF(pipe);
        if (id < -1) {
            Py_DECREF(iter);
            return NULL;
        }
        cyc at = id >= 0 && self->used[id] ? self->free[id] : 0;
        if (!any || at > best) best = at;
        any = 1;
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLongLong(any ? best : 0);
}

static PyObject *CorePipes_ready(CorePipes *self, PyObject *regions) {
    if (!initialized(self)) return NULL;
    PyObject *seq = PySequence_Fast(regions, "ready() takes a sequence of regions");
    if (seq == NULL) return NULL;
    cyc best = 0;
    int any = 0;
    for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(seq); r++) {
        Reg reg;
        Ranges *ranges;
        if (as_reg(PySequence_Fast_GET_ITEM(seq, r), &reg) < 0) goto fail;
        Py_ssize_t n = overlapping(self, &reg, &ranges);
        if (n < 0) goto fail;
        for (Py_ssize_t i = 0; i < n; i++) {
            cyc at = ranges->uses[self->scratch[i]].written;
            if (!any || at > best) best = at;
            any = 1;
        }
    }
    Py_DECREF(seq);
    return PyLong_FromLongLong(any ? best : 0);
fail:
    Py_DECREF(seq);
    return NULL;
}

static PyObject *CorePipes_last_read(CorePipes *self, PyObject *regions) {
    if (!initialized(self)) return NULL;
    PyObject *seq = PySequence_Fast(regions, "last_read() takes a sequence of regions");
    if (seq == NULL) return NULL;
    cyc best = 0;
    int reader = 0, any = 0;
    for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(seq); r++) {
        Reg reg;
        Ranges *ranges;
        if (as_reg(PySequence_Fast_GET_ITEM(seq, r), &reg) < 0) goto fail;
        Py_ssize_t n = overlapping(self, &reg, &ranges);
        if (n < 0) goto fail;
        for (Py_ssize_t i = 0; i < n; i++) { /* max(): the first of the latest */
            Use *u = &ranges->uses[self->scratch[i]];
            if (!any || u->read > best) {
                best = u->read;
                reader = u->reader;
            }
            any = 1;
        }
    }
    Py_DECREF(seq);
    return Py_BuildValue("(LO)", any ? best : (cyc)0, pipe_name(self, any ? reader : 0));
fail:
    Py_DECREF(seq);
    return NULL;
}

static PyObject *CorePipes_gm_written(CorePipes *self, PyObject *tensor) {
    if (!initialized(self)) return NULL;
    GmUse *use = gm_use(self, tensor, 0);
    if (use == NULL && PyErr_Occurred()) return NULL;
    return PyLong_FromLongLong(use != NULL ? use->written : 0);
}

static PyObject *CorePipes_copied(CorePipes *self, PyObject *args, PyObject *kwds) {
    if (!initialized(self)) return NULL;
    static char *names[] = {"source", "dest", NULL};
    PyObject *source_region, *dest_region;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:copied", names, &source_region, &dest_region)) return NULL;
    Reg source, dest;
    if (as_reg(source_region, &source) < 0 || as_reg(dest_region, &dest) < 0) return NULL;
    Ranges *ranges;
    Py_ssize_t n = overlapping(self, &source, &ranges);
    if (n < 0) return NULL;
    int has_latest = 0, writer = 0;
    cyc written = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* max() by written: the first of the latest */
        Use *u = &ranges->uses[self->scratch[i]];
        if (!has_latest || u->written > written) {
            written = u->written;
            writer = u->writer;
        }
        has_latest = 1;
    }
    Py_ssize_t first;
    Py_ssize_t filled = claim(self, dest.space, dest.lo, dest.hi, &ranges, &first);
    if (filled < 0) return NULL;
    for (Py_ssize_t i = first; i < first + filled; i++) {
        Use *u = &ranges->uses[i];
        cyc came = has_latest ? written : 0;
        if (came > u->written) u->written = came;
        if (has_latest) u->writer = writer;
    }
    Py_RETURN_NONE;
}

static PyObject *CorePipes_free_get(CorePipes *self, void *closure) {
    if (!initialized(self)) return NULL;
    PyObject *pipes = PyDict_New();
    if (pipes == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->nused; i++) {
        int id = self->order[i];
        PyObject *at = PyLong_FromLongLong(self->free[id]);
        if (at == NULL || PyDict_SetItem(pipes, pipe_name(self, id), at) < 0) {
            Py_XDECREF(at);
            Py_DECREF(pipes);
            return NULL;
        }
        Py_DECREF(at);
    }
    return pipes;
}

/* ------------------------------------------------------------------ running one op */

/* ``on`` of CorePipes._binding: a dependency on this core's pipes, if later than what was found. */
static inline void on(Binding *found, const Binding *best, cyc flag_cycles, int pipe, cyc at,
                      int producer, int what, PyObject *space) {
    if (at && producer) {
        cyc waited = at + (producer != pipe ? flag_cycles : 0);
        if ((found->kind == 0 || waited > found->at) && (best->kind == 0 || waited > best->at)) {
            found->kind = 2;
            found->at = waited;
            found->ready = at;
            found->producer = producer;
            found->what = what;
            found->space = space;
        }
    }
}

/* CorePipes._binding: the latest of what an op on ``pipe`` waits for. The sequences are fast. */
static int binding(CorePipes *self, int pipe, PyObject *after, PyObject *reads, PyObject *writes,
                   PyObject *gm_reads, PyObject *gm_writes, Binding *out) {
    Binding best = {0}, found = {0};
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(after); i++) {
        PyObject *dep = PySequence_Fast_GET_ITEM(after, i);
        cyc at;
        if (attr_cyc(dep, s_at, &at) < 0) return -1;
        if (best.kind == 0 || at > best.at) {
            best.kind = 1;
            best.dep = dep;
            best.at = at;
        }
    }
    cyc flag = self->flag_cycles;
    for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(reads); r++) {
        Reg reg;
        Ranges *ranges;
        if (as_reg(PySequence_Fast_GET_ITEM(reads, r), &reg) < 0) return -1;
        Py_ssize_t n = overlapping(self, &reg, &ranges);
        if (n < 0) return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            Use *u = &ranges->uses[self->scratch[i]];
            on(&found, &best, flag, pipe, u->written, u->writer, 0, reg.space);
        }
    }
    for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(writes); r++) {
        Reg reg;
        Ranges *ranges;
        if (as_reg(PySequence_Fast_GET_ITEM(writes, r), &reg) < 0) return -1;
        Py_ssize_t n = overlapping(self, &reg, &ranges);
        if (n < 0) return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            Use *u = &ranges->uses[self->scratch[i]];
            on(&found, &best, flag, pipe, u->read, u->reader, 1, reg.space);
            on(&found, &best, flag, pipe, u->written, u->writer, 2, reg.space);
        }
    }
    for (Py_ssize_t t = 0; t < PySequence_Fast_GET_SIZE(gm_reads); t++) {
        GmUse *gm = gm_use(self, PySequence_Fast_GET_ITEM(gm_reads, t), 0);
        if (gm == NULL && PyErr_Occurred()) return -1;
        if (gm != NULL) on(&found, &best, flag, pipe, gm->written, gm->writer, 2, NULL);
    }
    for (Py_ssize_t t = 0; t < PySequence_Fast_GET_SIZE(gm_writes); t++) {
        GmUse *gm = gm_use(self, PySequence_Fast_GET_ITEM(gm_writes, t), 0);
        if (gm == NULL && PyErr_Occurred()) return -1;
        if (gm != NULL) {
            on(&found, &best, flag, pipe, gm->read, gm->reader, 1, NULL);
            on(&found, &best, flag, pipe, gm->written, gm->writer, 2, NULL);
        }
    }
    *out = found.kind ? found : best;
    return 0;
}

/* CorePipes._note: what the op reads and writes, and when its result is ready. */
static int note(CorePipes *self, int pipe, cyc ready, PyObject *reads, PyObject *writes,
                PyObject *gm_reads, PyObject *gm_writes) {
    for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(reads); r++) {
        Reg reg;
        Ranges *ranges;
        Py_ssize_t first;
        if (as_reg(PySequence_Fast_GET_ITEM(reads, r), &reg) < 0) return -1;
        Py_ssize_t n = claim(self, reg.space, reg.lo, reg.hi, &ranges, &first);
        if (n < 0) return -1;
        for (Py_ssize_t i = first; i < first + n; i++) {
            Use *u = &ranges->uses[i];
            if (ready >= u->read) {
                u->read = ready;
                u->reader = pipe;
            }
        }
    }
    for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(writes); r++) {
        Reg reg;
        Ranges *ranges;
        Py_ssize_t first;
        if (as_reg(PySequence_Fast_GET_ITEM(writes, r), &reg) < 0) return -1;
        Py_ssize_t n = claim(self, reg.space, reg.lo, reg.hi, &ranges, &first);
        if (n < 0) return -1;
        for (Py_ssize_t i = first; i < first + n; i++) {
            ranges->uses[i].written = ready;
            ranges->uses[i].writer = pipe;
        }
    }
    for (Py_ssize_t t = 0; t < PySequence_Fast_GET_SIZE(gm_reads); t++) {
        GmUse *use = gm_use(self, PySequence_Fast_GET_ITEM(gm_reads, t), 1);
        if (use == NULL) return -1;
        if (ready >= use->read) {
            use->read = ready;
            use->reader = pipe;
        }
    }
    for (Py_ssize_t t = 0; t < PySequence_Fast_GET_SIZE(gm_writes); t++) {
        GmUse *use = gm_use(self, PySequence_Fast_GET_ITEM(gm_writes, t), 1);
        if (use == NULL) return -1;
        use->written = ready;
        use->writer = pipe;
    }
    return 0;
}

/* timeline.make_slice: a Slice made as frozen_record makes it (its __dict__ filled at once). */
static PyObject *make_slice(PyObject *core, PyObject *start, PyObject *cycles, PyObject *name,
                            PyObject *unit, PyObject *source, PyObject *peak, PyObject *roof,
                            PyObject *pipe, PyObject *flag_from, PyObject *flag_at) {
    PyObject *core_name = PyObject_GetAttr(core, s_name);
    if (core_name == NULL) return NULL;
    PyObject *task = PyObject_GetAttr(core, s_task);
    if (task == NULL) {
        Py_DECREF(core_name);
        return NULL;
    }
    PyObject *piece = PyBaseObject_Type.tp_new((PyTypeObject *)Slice, empty_tuple, NULL);
    PyObject *fields = piece != NULL ? PyObject_GenericGetDict(piece, NULL) : NULL;
    int failed = fields == NULL || PyDict_SetItem(fields, s_core, core_name) < 0 ||
                 PyDict_SetItem(fields, s_start, start) < 0 || PyDict_SetItem(fields, s_cycles, cycles) < 0 ||
                 PyDict_SetItem(fields, s_name, name) < 0 || PyDict_SetItem(fields, s_unit, unit) < 0 ||
                 PyDict_SetItem(fields, s_task, task) < 0 || PyDict_SetItem(fields, s_source, source) < 0 ||
                 PyDict_SetItem(fields, s_peak_cycles, peak) < 0 || PyDict_SetItem(fields, s_roof, roof) < 0 ||
                 PyDict_SetItem(fields, s_pipe, pipe) < 0 || PyDict_SetItem(fields, s_flag_from, flag_from) < 0 ||
                 PyDict_SetItem(fields, s_flag_at, flag_at) < 0;
    Py_XDECREF(fields);
    Py_DECREF(core_name);
    Py_DECREF(task);
    if (failed) {
        Py_XDECREF(piece);
        return NULL;
    }
    return piece;
}

static int record(CorePipes *self, PyObject *piece) {
    if (piece == NULL) return -1;
    PyObject *done = PyObject_CallMethodOneArg(self->recorder, s_record, piece);
    Py_DECREF(piece);
    if (done == NULL) return -1;
    Py_DECREF(done);
    return 0;
}

/* at_line(call.span) when the call has a span, else None (a new reference). */
static PyObject *source_of(PyObject *call) {
    if (call == Py_None) Py_RETURN_NONE;
    PyObject *span = PyObject_GetAttr(call, s_span);
    if (span == NULL) return NULL;
    if (span == Py_None) return span;
    PyObject *file = PyObject_GetAttr(span, s_file);
    PyObject *line = file != NULL ? PyObject_GetAttr(span, s_line) : NULL;
    PyObject *text = line != NULL ? PyUnicode_FromFormat("%S:%S", file, line) : NULL;
    Py_XDECREF(file);
    Py_XDECREF(line);
    Py_DECREF(span);
    return text;
}

/* The label of the op's slice: ``name or (call.op if call is not None else pipe)``. */
static PyObject *label_of(PyObject *name, PyObject *call, PyObject *pipe) {
    if (name != Py_None) {
        int named = PyObject_IsTrue(name);
        if (named < 0) return NULL;
        if (named) return Py_NewRef(name);
    }
    if (call != Py_None) return PyObject_GetAttr(call, s_op);
    return Py_NewRef(pipe);
}

/* _describe: what an op waited for, for its stall slice's name. */
static PyObject *describe(CorePipes *self, const Binding *b) {
    static const char *whats[] = {"data", "read", "written"};
    PyObject *producer = pipe_name(self, b->producer);
    if (b->space == NULL) return PyUnicode_FromFormat("wait for GM %s by %S", whats[b->what], producer);
    PyObject *space = PyObject_GetAttr(b->space, s_name);
    if (space == NULL) return NULL;
    PyObject *text = b->what == 0
                         ? PyUnicode_FromFormat("wait for %S data from %S", space, producer)
                         : PyUnicode_FromFormat("wait for %S buffer %s by %S", space, whats[b->what], producer);
    Py_DECREF(space);
    return text;
}

/* The stall slice of an op that waited from ``avail`` (its pipe free) to ``start`` for ``b``. */
static int record_stall(CorePipes *self, const Binding *b, cyc avail, cyc start, PyObject *pipe,
                        PyObject *call) {
    PyObject *what = NULL, *flag_from = NULL, *flag_at = NULL, *at = NULL, *cycles = NULL, *source = NULL;
    PyObject *piece = NULL;
    if (b->kind == 1) {
        PyObject *reason = PyObject_GetAttr(b->dep, s_what);
        if (reason == NULL) goto done;
        what = PyUnicode_FromFormat("wait for %S", reason);
        Py_DECREF(reason);
        flag_from = PyObject_GetAttr(b->dep, s_pipe);
        if (flag_from == NULL) goto done;
        int flagged = PyObject_IsTrue(flag_from);
        if (flagged < 0) goto done;
        flag_at = flagged ? PyObject_GetAttr(b->dep, s_ready) : Py_NewRef(Py_None);
    } else {
        what = describe(self, b);
        flag_from = Py_NewRef(pipe_name(self, b->producer));
        flag_at = PyLong_FromLongLong(b->ready);
    }
    if (what == NULL || flag_at == NULL) goto done;
    at = PyLong_FromLongLong(avail);
    cycles = PyLong_FromLongLong(start - avail);
    source = source_of(call);
    if (at == NULL || cycles == NULL || source == NULL) goto done;
    static PyObject *zero = NULL;
    if (zero == NULL && (zero = PyFloat_FromDouble(0.0)) == NULL) goto done;
    piece = make_slice(self->core, at, cycles, what, STALL, source, zero, Py_None, pipe, flag_from, flag_at);
    Py_XDECREF(what);
    Py_XDECREF(flag_from);
    Py_XDECREF(flag_at);
    Py_XDECREF(at);
    Py_XDECREF(cycles);
    Py_XDECREF(source);
    return record(self, piece);
done:
    Py_XDECREF(what);
    Py_XDECREF(flag_from);
    Py_XDECREF(flag_at);
    Py_XDECREF(at);
    Py_XDECREF(cycles);
    Py_XDECREF(source);
    return -1;
}

/* The busy slice of an op on ``pipe`` from ``start`` for its occupancy. */
static int record_busy(CorePipes *self, PyObject *cost, PyObject *call, PyObject *name, PyObject *pipe,
                       cyc start, cyc occupancy, PyObject *flag_from, PyObject *flag_at) {
    PyObject *label = label_of(name, call, pipe);
    PyObject *source = label != NULL ? source_of(call) : NULL;
    PyObject *peak = source != NULL ? PyObject_GetAttr(cost, s_peak_cycles) : NULL;
    PyObject *roof = peak != NULL ? PyObject_GetAttr(cost, s_roof) : NULL;
    PyObject *at = roof != NULL ? PyLong_FromLongLong(start) : NULL;
    PyObject *cycles = at != NULL ? PyLong_FromLongLong(occupancy) : NULL;
    PyObject *piece = NULL;
    int failed = cycles == NULL;
    if (!failed) {
        piece = make_slice(self->core, at, cycles, label, pipe, source, peak, roof, pipe, flag_from, flag_at);
        failed = record(self, piece) < 0;
    }
    Py_XDECREF(label);
    Py_XDECREF(source);
    Py_XDECREF(peak);
    Py_XDECREF(roof);
    Py_XDECREF(at);
    Py_XDECREF(cycles);
    return failed ? -1 : 0;
}

static const char *run_names[] = {"cost", "call", "issue", "reads", "writes", "gm_reads", "gm_writes",
                                  "after", "name"};
#define RUN_ARGS 9

/* CorePipes.run(cost, call, issue, reads=(), writes=(), gm_reads=(), gm_writes=(), after=(), name=None) */
static PyObject *CorePipes_run(CorePipes *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (!initialized(self)) return NULL;
    PyObject *given[RUN_ARGS] = {NULL};
    if (nargs > RUN_ARGS) {
        PyErr_SetString(PyExc_TypeError, "run() takes at most 9 arguments");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) given[i] = args[i];
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int placed = 0;
        for (int i = 0; i < RUN_ARGS && !placed; i++) {
            if (PyUnicode_CompareWithASCIIString(key, run_names[i]) == 0) {
                if (given[i] != NULL) {
                    PyErr_Format(PyExc_TypeError, "run() got multiple values for argument '%s'", run_names[i]);
                    return NULL;
                }
                given[i] = args[nargs + k];
                placed = 1;
            }
        }
        if (!placed) {
            PyErr_Format(PyExc_TypeError, "run() got an unexpected keyword argument '%U'", key);
            return NULL;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (given[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "run() missing required argument '%s'", run_names[i]);
            return NULL;
        }
    }
    PyObject *cost = given[0], *call = given[1], *name = given[8] != NULL ? given[8] : Py_None;
    cyc issue, cycles, pipelined;
    if (as_cyc(given[2], &issue) < 0) return NULL;
    PyObject *pipe = PyObject_GetAttr(cost, s_unit);
    if (pipe == NULL) return NULL;
    PyObject *seqs[5] = {NULL};
    PyObject *result = NULL;
    for (int i = 0; i < 5; i++) {
        PyObject *given_seq = given[3 + i] != NULL ? given[3 + i] : empty_tuple;
        seqs[i] = PySequence_Fast(given_seq, "run() takes sequences of regions, tensors and dependencies");
        if (seqs[i] == NULL) goto done;
    }
    PyObject *reads = seqs[0], *writes = seqs[1], *gm_reads = seqs[2], *gm_writes = seqs[3], *after = seqs[4];
    if (attr_cyc(cost, s_cycles, &cycles) < 0 || attr_cyc(cost, s_pipelined, &pipelined) < 0) goto done;
    int pid = pipe_id(self, pipe, 1);
    if (pid < 0) goto done;
    cyc avail = self->used[pid] && self->free[pid] > issue ? self->free[pid] : issue;
    Binding b;
    if (binding(self, pid, after, reads, writes, gm_reads, gm_writes, &b) < 0) goto done;
    cyc start = b.kind == 0 || b.at <= avail ? avail : b.at;
    cyc ready = start + cycles;
    cyc occupancy = cycles - pipelined;
    if (!self->used[pid]) {
        self->used[pid] = 1;
        self->order[self->nused++] = pid;
    }
    self->free[pid] = start + occupancy;
    if (note(self, pid, ready, reads, writes, gm_reads, gm_writes) < 0) goto done;
    if (start > avail && b.kind != 0) {
        if (record_stall(self, &b, avail, start, pipe, call) < 0) goto done;
    }
    if (occupancy) {
        /* The op's start waited for a flag from another pipe of the core (the trace draws it). */
        PyObject *flag_from = Py_None, *flag_at = NULL;
        if (b.kind == 2 && b.at == start && b.producer != pid) {
            flag_from = pipe_name(self, b.producer);
            flag_at = PyLong_FromLongLong(b.ready);
        } else if (b.kind == 1 && b.at == start) {
            PyObject *from = PyObject_GetAttr(b.dep, s_pipe);
            if (from == NULL) goto done;
            int same = from == Py_None ? 1 : PyObject_RichCompareBool(from, pipe, Py_EQ);
            if (same < 0) {
                Py_DECREF(from);
                goto done;
            }
            if (!same) {
                flag_from = from;
                flag_at = PyObject_GetAttr(b.dep, s_ready);
            }
            Py_DECREF(from); /* b.dep holds it */
        }
        if (flag_at == NULL) {
            if (PyErr_Occurred()) goto done;
            flag_at = Py_NewRef(Py_None);
        }
        int failed = record_busy(self, cost, call, name, pipe, start, occupancy, flag_from, flag_at);
        Py_DECREF(flag_at);
        if (failed) goto done;
    }
    result = Py_BuildValue("(LL)", start, ready);
done:
    for (int i = 0; i < 5; i++) Py_XDECREF(seqs[i]);
    Py_DECREF(pipe);
    return result;
}

/* ------------------------------------------------------------------ the module */

static PyMethodDef CorePipes_methods[] = {
    {"run", (PyCFunction)(void (*)(void))CorePipes_run, METH_FASTCALL | METH_KEYWORDS,
     "run(cost, call, issue, reads=(), writes=(), gm_reads=(), gm_writes=(), after=(), name=None)"
     " -> (start, ready): put an op on its pipe (see corepipes.CorePipes.run)."},
    {"drained", (PyCFunction)(void (*)(void))CorePipes_drained, METH_VARARGS | METH_KEYWORDS,
     "drained(pipes=None): the cycle at which ``pipes`` (every pipe by default) are done."},
    {"ready", (PyCFunction)CorePipes_ready, METH_O, "ready(regions): when the last write to any is done."},
    {"last_read", (PyCFunction)CorePipes_last_read, METH_O,
     "last_read(regions) -> (cycle, pipe): when the last read of any is done, and on which pipe."},
    {"gm_written", (PyCFunction)CorePipes_gm_written, METH_O,
     "gm_written(tensor): when this core's last write to ``tensor`` is done."},
    {"copied", (PyCFunction)(void (*)(void))CorePipes_copied, METH_VARARGS | METH_KEYWORDS,
     "copied(source, dest): ``dest`` holds ``source``'s bytes once they are ready."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef CorePipes_members[] = {
    {"core", T_OBJECT_EX, offsetof(CorePipes, core), 0, "the core"},
    {"recorder", T_OBJECT_EX, offsetof(CorePipes, recorder), 0, "where the slices go"},
    {"flag_cycles", T_LONGLONG, offsetof(CorePipes, flag_cycles), 0, "a flag handshake's cycles"},
    {NULL},
};

static PyGetSetDef CorePipes_getset[] = {
    {"free", (getter)CorePipes_free_get, NULL, "pipe -> when it is free (a copy)", NULL},
    {NULL},
};

static PyTypeObject CorePipesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pypto_sim_a2a3.hw._corepipes.CorePipes",
    .tp_doc = PyDoc_STR("The pipes of one core during a launch (compiled; the reference is "
                        "pypto_sim_a2a3.hw.corepipes.CorePipes)."),
    .tp_basicsize = sizeof(CorePipes),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CorePipes_init,
    .tp_dealloc = (destructor)CorePipes_dealloc,
    .tp_traverse = (traverseproc)CorePipes_traverse,
    .tp_clear = (inquiry)CorePipes_clear,
    .tp_methods = CorePipes_methods,
    .tp_members = CorePipes_members,
    .tp_getset = CorePipes_getset,
    .tp_weaklistoffset = offsetof(CorePipes, weakreflist),
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_corepipes",
    "The compiled timing core's CorePipes (see pypto_sim_a2a3/hw/corepipes.py, the reference).", -1, NULL,
};

static int intern(PyObject **slot, const char *text) {
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC PyInit__corepipes(void) {
    if (intern(&s_core, "core") < 0 || intern(&s_start, "start") < 0 || intern(&s_cycles, "cycles") < 0 ||
        intern(&s_name, "name") < 0 || intern(&s_unit, "unit") < 0 || intern(&s_task, "task") < 0 ||
        intern(&s_source, "source") < 0 || intern(&s_peak_cycles, "peak_cycles") < 0 ||
        intern(&s_roof, "roof") < 0 || intern(&s_pipe, "pipe") < 0 || intern(&s_flag_from, "flag_from") < 0 ||
        intern(&s_flag_at, "flag_at") < 0 || intern(&s_at, "at") < 0 || intern(&s_what, "what") < 0 ||
        intern(&s_ready, "ready") < 0 || intern(&s_pipelined, "pipelined") < 0 || intern(&s_op, "op") < 0 ||
        intern(&s_span, "span") < 0 || intern(&s_file, "file") < 0 || intern(&s_line, "line") < 0 ||
        intern(&s_record, "record") < 0 || intern(&s_untyped_storage, "untyped_storage") < 0 ||
        intern(&s_data_ptr, "data_ptr") < 0 || intern(&s_space, "space") < 0 || intern(&s_lo, "lo") < 0 ||
        intern(&s_hi, "hi") < 0)
        return NULL;
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL) return NULL;
    PyObject *backend = PyImport_ImportModule("pypto.ir.backend");
    if (backend == NULL) return NULL;
    Slice = PyObject_GetAttrString(backend, "Slice");
    STALL = PyObject_GetAttrString(backend, "STALL");
    Py_DECREF(backend);
    if (Slice == NULL || STALL == NULL) return NULL;
    if (!PyType_Check(Slice)) {
        PyErr_SetString(PyExc_TypeError, "pypto.ir.backend.Slice is not a class");
        return NULL;
    }
    if (PyType_Ready(&CorePipesType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&CorePipesType);
    if (PyModule_AddObject(m, "CorePipes", (PyObject *)&CorePipesType) < 0) {
        Py_DECREF(&CorePipesType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
