/* The compiled scheduler: engine/scheduler.py's Scheduler and Process, in C.
 *
 * The reference is pypto_sim_a2a3/engine/scheduler.py; this module keeps its event loop to the
 * letter: the runnable processes in a heap by (core clock when pushed, push order), the blocked
 * ones in the order they blocked, each wait checked when a signal it names changed (or in every
 * pass when it names none), the stall of a woken core told to the observers before its clock
 * moves, ``on_wake``, ``keeps_clock`` and the clocks it holds back, ``on_time`` before each step.
 * The processes stay Python generators and ``Advance`` / ``Wait`` / ``Signal`` stay Python objects;
 * what differs is only where the bookkeeping lives: the heaps are C arrays, the blocked processes
 * a linked list through the Process records, a wait's fields read once as it blocks.
 *
 * Read scheduler.py first: the comments here say where the C keeps the Python's order of events.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef long long cyc; /* a modeled cycle */

typedef struct Process {
    PyObject_HEAD
    PyObject *core;
    PyObject *coroutine;
    PyObject *result;
    PyObject *waiting; /* the Wait it is blocked in, or None */
    PyObject *on_wake;
    PyObject *ready; /* while blocked: waiting.ready */
    PyObject *on;    /* while blocked: waiting.on, as a tuple */
    long long order; /* spawn order */
    long long seq;   /* when its current wait began */
    char done, dirty;
    char keeps;   /* while blocked: waiting.keeps_clock */
    char has_on;  /* while blocked: waiting.on is not empty */
    char blocked; /* in its scheduler's list of blocked processes */
    struct Process *prev, *next; /* that list, in the order they blocked */
    PyObject *weakreflist;
} Process;

typedef struct {
    cyc clock;
    long long order;
    Process *proc; /* a reference owned by the heap */
} Runnable;

typedef struct {
    long long seq;
    Process *proc; /* a reference owned by the heap */
} Due;

typedef struct {
    PyObject_HEAD
    cyc now;
    Runnable *runnable;
    Py_ssize_t nrun, caprun;
    Due *due; /* the blocked processes to check in the next pass (Scheduler._due) */
    Py_ssize_t ndue, capdue;
    Due *later; /* a pass's entries for the next one */
    Py_ssize_t nlater, caplater;
    Process *head, *tail; /* the blocked processes; the list owns one reference to each */
    Py_ssize_t nblocked, nkept;
    long long order, blocks;
    PyObject *observers; /* list */
    PyObject *on_time;   /* callable or None */
    Process *stepping;   /* the process of the latest step, or NULL */
    int check;
    int waking; /* inside a pass (which must not begin again from a callback) */
    PyObject *weakreflist;
} Scheduler;

static PyTypeObject ProcessType;
static PyTypeObject SchedulerType;

static PyObject *Advance;        /* pypto_sim_a2a3.engine.scheduler.Advance */
static PyObject *deadlock_error; /* pypto_sim_a2a3.engine.scheduler.deadlock_error */
static PyObject *s_clock, *s_advance, *s_stall, *s_unit, *s_cycles, *s_ready, *s_on, *s_keeps_clock,
    *s_name, *s_blocked, *s_waiters, *s_scheduler, *s_what;

/* ------------------------------------------------------------------ small helpers */

static int grow(void **items, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t cap2 = *cap ? *cap * 2 : 16;
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

static int core_clock(PyObject *core, cyc *out) {
    PyObject *value = PyObject_GetAttr(core, s_clock);
    if (value == NULL) return -1;
    cyc clock = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (clock == -1 && PyErr_Occurred()) return -1;
    *out = clock;
    return 0;
}

/* ------------------------------------------------------------------ the runnable heap */

static int run_before(const Runnable *a, const Runnable *b) {
    return a->clock < b->clock || (a->clock == b->clock && a->order < b->order);
}

/* Scheduler._push: the process joins the heap at its core's clock (takes a new reference). */
static int push_runnable(Scheduler *self, Process *proc) {
    cyc clock;
    if (core_clock(proc->core, &clock) < 0) return -1;
    if (grow((void **)&self->runnable, &self->caprun, self->nrun + 1, sizeof(Runnable)) < 0) return -1;
    Runnable item = {clock, self->order++, proc};
    Py_INCREF(proc);
    Py_ssize_t i = self->nrun++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!run_before(&item, &self->runnable[parent])) break;
        self->runnable[i] = self->runnable[parent];
        i = parent;
    }
    self->runnable[i] = item;
    return 0;
}

/* The earliest runnable process (a reference passed to the caller); the heap must not be empty. */
static Process *pop_runnable(Scheduler *self) {
    Runnable *heap = self->runnable;
    Process *top = heap[0].proc;
    Runnable last = heap[--self->nrun];
    Py_ssize_t n = self->nrun, i = 0;
    while (1) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && run_before(&heap[child + 1], &heap[child])) child++;
        if (!run_before(&heap[child], &last)) break;
        heap[i] = heap[child];
        i = child;
    }
    if (n > 0) heap[i] = last;
    return top;
}

/* ------------------------------------------------------------------ the due heap */

/* An entry (seq, proc) joins the heap, which takes over the caller's reference to proc. */
static int push_due_owned(Scheduler *self, long long seq, Process *proc) {
    if (grow((void **)&self->due, &self->capdue, self->ndue + 1, sizeof(Due)) < 0) {
        Py_DECREF(proc);
        return -1;
    }
    Due item = {seq, proc};
    Py_ssize_t i = self->ndue++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (self->due[parent].seq <= item.seq) break;
        self->due[i] = self->due[parent];
        i = parent;
    }
    self->due[i] = item;
    return 0;
}

static int push_due(Scheduler *self, Process *proc) {
    Py_INCREF(proc);
    return push_due_owned(self, proc->seq, proc);
}

static Due pop_due(Scheduler *self) {
    Due *heap = self->due;
    Due top = heap[0];
    Due last = heap[--self->ndue];
    Py_ssize_t n = self->ndue, i = 0;
    while (1) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && heap[child + 1].seq < heap[child].seq) child++;
        if (heap[child].seq >= last.seq) break;
        heap[i] = heap[child];
        i = child;
    }
    if (n > 0) heap[i] = last;
    return top;
}

static void clear_due(Scheduler *self) {
    while (self->ndue > 0) {
        Process *proc = self->due[--self->ndue].proc;
        Py_DECREF(proc);
    }
}

/* ------------------------------------------------------------------ the blocked list */

static void link_blocked(Scheduler *self, Process *proc) {
    Py_INCREF(proc);
    proc->blocked = 1;
    proc->prev = self->tail;
    proc->next = NULL;
    if (self->tail != NULL)
        self->tail->next = proc;
    else
        self->head = proc;
    self->tail = proc;
    self->nblocked++;
}

/* Drops the list's reference: the caller must hold one of its own. */
static void unlink_blocked(Scheduler *self, Process *proc) {
    if (proc->prev != NULL)
        proc->prev->next = proc->next;
    else
        self->head = proc->next;
    if (proc->next != NULL)
        proc->next->prev = proc->prev;
    else
        self->tail = proc->prev;
    proc->prev = proc->next = NULL;
    proc->blocked = 0;
    self->nblocked--;
    Py_DECREF(proc);
}

/* The wait is over (or the process is dropped): forget what was read of it. */
static void forget_wait(Process *proc) {
    Py_INCREF(Py_None);
    Py_SETREF(proc->waiting, Py_None);
    Py_CLEAR(proc->ready);
    Py_CLEAR(proc->on);
    proc->keeps = proc->has_on = 0;
}

/* The blocked processes (new references) in the order they blocked, or sorted by spawn order. */
static Process **blocked_array(Scheduler *self, int by_spawn);

static int by_order(const void *a, const void *b) {
    long long x = (*(Process *const *)a)->order, y = (*(Process *const *)b)->order;
    return (x > y) - (x < y);
}

static Process **blocked_array(Scheduler *self, int by_spawn) {
    Process **items = PyMem_Malloc((size_t)(self->nblocked ? self->nblocked : 1) * sizeof(Process *));
    if (items == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t i = 0;
    for (Process *proc = self->head; proc != NULL; proc = proc->next) {
        Py_INCREF(proc);
        items[i++] = proc;
    }
    if (by_spawn) qsort(items, (size_t)i, sizeof(Process *), by_order);
    return items;
}

static void free_array(Process **items, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(items[i]);
    PyMem_Free(items);
}

/* ------------------------------------------------------------------ Process */

static int Process_traverse(Process *self, visitproc visit, void *arg) {
    Py_VISIT(self->core);
    Py_VISIT(self->coroutine);
    Py_VISIT(self->result);
    Py_VISIT(self->waiting);
    Py_VISIT(self->on_wake);
    Py_VISIT(self->ready);
    Py_VISIT(self->on);
    return 0;
}

static int Process_clear(Process *self) {
    Py_CLEAR(self->core);
    Py_CLEAR(self->coroutine);
    Py_CLEAR(self->result);
    Py_CLEAR(self->waiting);
    Py_CLEAR(self->on_wake);
    Py_CLEAR(self->ready);
    Py_CLEAR(self->on);
    return 0;
}

static void Process_dealloc(Process *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    Process_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Process_repr(Process *self) {
    return PyUnicode_FromFormat("Process(core=%R, order=%lld, done=%s)", self->core, self->order,
                                self->done ? "True" : "False");
}

static PyMemberDef Process_members[] = {
    {"core", T_OBJECT, offsetof(Process, core), READONLY, "the core whose clock it advances"},
    {"coroutine", T_OBJECT, offsetof(Process, coroutine), READONLY, "its generator"},
    {"order", T_LONGLONG, offsetof(Process, order), READONLY, "spawn order"},
    {"result", T_OBJECT, offsetof(Process, result), 0, "what the coroutine returned"},
    {"done", T_BOOL, offsetof(Process, done), 0, "whether the coroutine returned"},
    {"waiting", T_OBJECT, offsetof(Process, waiting), READONLY, "the Wait it is blocked in, or None"},
    {"dirty", T_BOOL, offsetof(Process, dirty), 0, "a signal its wait is on changed since its last check"},
    {"on_wake", T_OBJECT, offsetof(Process, on_wake), 0, "told the process whose step ended its wait"},
    {"seq", T_LONGLONG, offsetof(Process, seq), READONLY, "when its current wait began"},
    {NULL},
};

static PyTypeObject ProcessType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pypto_sim_a2a3.engine._scheduler.Process",
    .tp_doc = PyDoc_STR("A coroutine bound to the core whose clock it advances (made by Scheduler.spawn)."),
    .tp_basicsize = sizeof(Process),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)Process_dealloc,
    .tp_traverse = (traverseproc)Process_traverse,
    .tp_clear = (inquiry)Process_clear,
    .tp_repr = (reprfunc)Process_repr,
    .tp_members = Process_members,
    .tp_weaklistoffset = offsetof(Process, weakreflist),
};

static Process *new_process(PyObject *core, PyObject *coroutine, long long order) {
    Process *proc = PyObject_GC_New(Process, &ProcessType);
    if (proc == NULL) return NULL;
    Py_INCREF(core);
    Py_INCREF(coroutine);
    Py_INCREF(Py_None);
    Py_INCREF(Py_None);
    Py_INCREF(Py_None);
    proc->core = core;
    proc->coroutine = coroutine;
    proc->result = Py_None;
    proc->waiting = Py_None;
    proc->on_wake = Py_None;
    proc->ready = proc->on = NULL;
    proc->order = order;
    proc->seq = 0;
    proc->done = proc->dirty = proc->keeps = proc->has_on = proc->blocked = 0;
    proc->prev = proc->next = NULL;
    proc->weakreflist = NULL;
    PyObject_GC_Track(proc);
    return proc;
}

/* ------------------------------------------------------------------ the observers */

/* Scheduler._notify: each observer sees the stretch (core, core.clock, cycles, event). */
static int notify(Scheduler *self, PyObject *core, PyObject *cycles, PyObject *event) {
    /* An observer may add another: the list is read as it is now at each turn, as a for loop would
     * (and the core's clock too). */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->observers); i++) {
        PyObject *observer = PyList_GET_ITEM(self->observers, i);
        PyObject *clock = PyObject_GetAttr(core, s_clock);
        if (clock == NULL) return -1;
        Py_INCREF(observer);
        PyObject *args[4] = {core, clock, cycles, event};
        PyObject *done = PyObject_Vectorcall(observer, args, 4, NULL);
        Py_DECREF(observer);
        Py_DECREF(clock);
        if (done == NULL) return -1;
        Py_DECREF(done);
    }
    return 0;
}

static int call_method2(PyObject *obj, PyObject *name, PyObject *a, PyObject *b) {
    PyObject *args[3] = {obj, a, b};
    PyObject *done = PyObject_VectorcallMethod(name, args, (b ? 3 : 2) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (done == NULL) return -1;
    Py_DECREF(done);
    return 0;
}

/* ------------------------------------------------------------------ a step */

/* The process blocks in ``wait``: it joins the blocked list and is due for a check. */
static int block(Scheduler *self, Process *proc, PyObject *wait) {
    PyObject *ready = PyObject_GetAttr(wait, s_ready);
    if (ready == NULL) return -1;
    PyObject *on_value = PyObject_GetAttr(wait, s_on);
    if (on_value == NULL) {
        Py_DECREF(ready);
        return -1;
    }
    PyObject *on = PySequence_Tuple(on_value);
    Py_DECREF(on_value);
    if (on == NULL) {
        Py_DECREF(ready);
        return -1;
    }
    PyObject *keeps_value = PyObject_GetAttr(wait, s_keeps_clock);
    int keeps = keeps_value == NULL ? -1 : PyObject_IsTrue(keeps_value);
    Py_XDECREF(keeps_value);
    if (keeps < 0) {
        Py_DECREF(ready);
        Py_DECREF(on);
        return -1;
    }
    Py_INCREF(wait);
    Py_SETREF(proc->waiting, wait);
    Py_XSETREF(proc->ready, ready);
    Py_XSETREF(proc->on, on);
    proc->keeps = (char)keeps;
    proc->has_on = PyTuple_GET_SIZE(on) > 0;
    proc->seq = self->blocks++;
    link_blocked(self, proc);
    self->nkept += keeps;
    if (proc->has_on) proc->dirty = 1; /* checked once as it blocks */
    return push_due(self, proc);
}

/* Scheduler._step: one step of ``proc``'s coroutine. */
static int step(Scheduler *self, Process *proc) {
    Py_INCREF(proc);
    Py_XSETREF(self->stepping, proc);
    PyObject *event = NULL;
    PySendResult sent = PyIter_Send(proc->coroutine, Py_None, &event);
    if (sent == PYGEN_ERROR) return -1;
    if (sent == PYGEN_RETURN) {
        Py_XSETREF(proc->result, event);
        proc->done = 1;
        return 0;
    }
    int advance = Py_IS_TYPE(event, (PyTypeObject *)Advance) ? 1 : PyObject_IsInstance(event, Advance);
    int failed = advance < 0;
    if (advance > 0) {
        PyObject *cycles = PyObject_GetAttr(event, s_cycles);
        PyObject *unit = cycles == NULL ? NULL : PyObject_GetAttr(event, s_unit);
        failed = unit == NULL || notify(self, proc->core, cycles, event) < 0 ||
                 call_method2(proc->core, s_advance, unit, cycles) < 0 || push_runnable(self, proc) < 0;
        Py_XDECREF(cycles);
        Py_XDECREF(unit);
    } else if (advance == 0) {
        failed = block(self, proc, event) < 0;
    }
    Py_DECREF(event);
    return failed ? -1 : 0;
}

/* ------------------------------------------------------------------ waking */

/* The signals of ``proc``'s wait mark it when they change (Signal._waiters, Signal._scheduler). */
static int listen(Scheduler *self, Process *proc) {
    PyObject *on = proc->on;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(on); i++) {
        PyObject *signal = PyTuple_GET_ITEM(on, i);
        PyObject *waiters = PyObject_GetAttr(signal, s_waiters);
        if (waiters == NULL) return -1;
        int failed = PyObject_SetItem(waiters, (PyObject *)proc, Py_None);
        Py_DECREF(waiters);
        if (failed < 0 || PyObject_SetAttr(signal, s_scheduler, (PyObject *)self) < 0) return -1;
    }
    return 0;
}

/* Scheduler._check: 1 if the wait was ready and the process woke, 0 if not, -1 on an error. The
 * caller holds a reference to ``proc``. */
static int check(Scheduler *self, Process *proc) {
    proc->dirty = 0;
    PyObject *ready = proc->ready;
    Py_INCREF(ready);
    PyObject *answer = PyObject_CallNoArgs(ready);
    Py_DECREF(ready);
    if (answer == NULL) return -1;
    int is_ready = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    if (is_ready < 0) return -1;
    if (!is_ready) return listen(self, proc) < 0 ? -1 : 0;
    /* A woken core resumes when the event that freed it happened, not earlier. */
    PyObject *wait = proc->waiting;
    Py_INCREF(wait);
    cyc clock;
    if (core_clock(proc->core, &clock) < 0) goto error;
    if (self->now > clock && !proc->keeps) {
        PyObject *cycles = PyLong_FromLongLong(self->now - clock);
        if (cycles == NULL) goto error;
        int failed = notify(self, proc->core, cycles, wait) < 0 || call_method2(proc->core, s_stall, cycles, NULL) < 0;
        Py_DECREF(cycles);
        if (failed) goto error;
    }
    self->nkept -= proc->keeps;
    forget_wait(proc);
    unlink_blocked(self, proc);
    Py_DECREF(wait);
    if (proc->on_wake != NULL && proc->on_wake != Py_None) {
        PyObject *on_wake = proc->on_wake;
        PyObject *stepper = self->stepping != NULL ? (PyObject *)self->stepping : Py_None;
        Py_INCREF(on_wake);
        Py_INCREF(stepper);
        PyObject *done = PyObject_CallOneArg(on_wake, stepper);
        Py_DECREF(stepper);
        Py_DECREF(on_wake);
        if (done == NULL) return -1;
        Py_DECREF(done);
    }
    return push_runnable(self, proc) < 0 ? -1 : 1;
error:
    Py_DECREF(wait);
    return -1;
}

static int keep_later(Scheduler *self, Due entry) {
    if (grow((void **)&self->later, &self->caplater, self->nlater + 1, sizeof(Due)) < 0) {
        Py_DECREF(entry.proc);
        return -1;
    }
    self->later[self->nlater++] = entry;
    return 0;
}

static int missed_wake_up(Process *proc) {
    PyObject *name = PyObject_GetAttr(proc->core, s_name);
    PyObject *what = name == NULL ? NULL : PyObject_GetAttr(proc->waiting, s_what);
    if (what != NULL) PyErr_Format(PyExc_AssertionError, "%S missed a wake-up: %S is ready", name, what);
    Py_XDECREF(name);
    Py_XDECREF(what);
    return -1;
}

/* Scheduler._check_every_wait: check_wakeups=True. */
static int check_every_wait(Scheduler *self) {
    clear_due(self);
    Py_ssize_t n = self->nblocked;
    Process **blocked = blocked_array(self, 0);
    if (blocked == NULL) return -1;
    int failed = 0;
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        Process *proc = blocked[i];
        if (!proc->blocked) continue;
        if (proc->has_on && !proc->dirty) {
            PyObject *answer = PyObject_CallNoArgs(proc->ready);
            int is_ready = answer == NULL ? -1 : PyObject_IsTrue(answer);
            Py_XDECREF(answer);
            failed = is_ready < 0 || (is_ready && missed_wake_up(proc) < 0);
            continue;
        }
        failed = check(self, proc) < 0;
    }
    free_array(blocked, n);
    clear_due(self);
    return failed ? -1 : 0;
}

/* Scheduler._wake_ready: check the due processes in the order they blocked. */
static int wake_ready(Scheduler *self) {
    if (self->check) return check_every_wait(self);
    if (self->ndue == 0) return 0;
    if (self->waking) {
        PyErr_SetString(PyExc_RuntimeError, "the scheduler's wake-up pass began again inside itself");
        return -1;
    }
    self->waking = 1;
    self->nlater = 0;
    long long last = -1;
    int failed = 0;
    while (self->ndue > 0 && !failed) {
        Due entry = pop_due(self);
        Process *proc = entry.proc;
        if (!proc->blocked || proc->seq != entry.seq) { /* woken since it was marked */
            Py_DECREF(proc);
            continue;
        }
        if (entry.seq <= last) { /* marked again after its check in this pass */
            failed = keep_later(self, entry) < 0;
            continue;
        }
        last = entry.seq;
        int woke = check(self, proc);
        if (woke == 0 && !proc->has_on) {
            failed = keep_later(self, entry) < 0; /* a polled wait: due in every pass */
            continue;
        }
        failed = woke < 0;
        Py_DECREF(proc);
    }
    for (Py_ssize_t i = 0; i < self->nlater; i++)
        if (push_due_owned(self, self->later[i].seq, self->later[i].proc) < 0) failed = 1;
    self->nlater = 0;
    self->waking = 0;
    return failed ? -1 : 0;
}

/* ------------------------------------------------------------------ the loop */

/* on_time(min(now, the clocks of blocked cores whose wait keeps them)) */
static int tell_time(Scheduler *self) {
    if (self->on_time == Py_None) return 0;
    cyc t = self->now;
    if (self->nkept > 0) {
        for (Process *proc = self->head; proc != NULL; proc = proc->next) {
            if (!proc->keeps) continue;
            cyc clock;
            if (core_clock(proc->core, &clock) < 0) return -1;
            if (clock < t) t = clock;
        }
    }
    PyObject *at = PyLong_FromLongLong(t);
    if (at == NULL) return -1;
    PyObject *on_time = self->on_time;
    Py_INCREF(on_time);
    PyObject *done = PyObject_CallOneArg(on_time, at);
    Py_DECREF(on_time);
    Py_DECREF(at);
    if (done == NULL) return -1;
    Py_DECREF(done);
    return 0;
}

static PyObject *blocked_waits(Scheduler *self, int reasons) {
    Py_ssize_t n = self->nblocked;
    Process **blocked = blocked_array(self, 1);
    if (blocked == NULL) return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        Process *proc = blocked[i];
        if (proc->waiting == Py_None) continue;
        PyObject *name = PyObject_GetAttr(proc->core, s_name);
        PyObject *what = name == NULL ? NULL
                         : reasons   ? PyObject_CallMethodNoArgs(proc->waiting, s_blocked)
                                     : Py_NewRef(proc->waiting);
        PyObject *pair = what == NULL ? NULL : PyTuple_Pack(2, name, what);
        if (pair == NULL || PyList_Append(out, pair) < 0) Py_CLEAR(out);
        Py_XDECREF(pair);
        Py_XDECREF(what);
        Py_XDECREF(name);
    }
    free_array(blocked, n);
    return out;
}

/* DeadlockError: built by scheduler.py's deadlock_error from each blocked process's wait. */
static void raise_deadlock(Scheduler *self) {
    PyObject *blocked = blocked_waits(self, 0);
    if (blocked == NULL) return;
    PyObject *error = PyObject_CallOneArg(deadlock_error, blocked);
    Py_DECREF(blocked);
    if (error == NULL) return;
    PyErr_SetObject((PyObject *)Py_TYPE(error), error);
    Py_DECREF(error);
}

static PyObject *Scheduler_run(Scheduler *self, PyObject *Py_UNUSED(ignored)) {
    while (self->nrun > 0 || self->nblocked > 0) {
        if (wake_ready(self) < 0) return NULL;
        if (self->nrun == 0) {
            raise_deadlock(self);
            return NULL;
        }
        Process *proc = pop_runnable(self);
        int failed = core_clock(proc->core, &self->now) < 0 || tell_time(self) < 0 || step(self, proc) < 0;
        Py_DECREF(proc);
        if (failed) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Scheduler_run_until(Scheduler *self, PyObject *arg) {
    cyc horizon = PyLong_AsLongLong(arg);
    if (horizon == -1 && PyErr_Occurred()) return NULL;
    while (1) {
        if (wake_ready(self) < 0) return NULL;
        if (self->nrun == 0) Py_RETURN_NONE;
        if (self->runnable[0].clock >= horizon) return PyLong_FromLongLong(self->runnable[0].clock);
        Process *proc = pop_runnable(self);
        cyc clock;
        int failed = core_clock(proc->core, &clock) < 0;
        if (!failed && clock > self->now) self->now = clock;
        failed = failed || tell_time(self) < 0 || step(self, proc) < 0;
        Py_DECREF(proc);
        if (failed) return NULL;
    }
}

static PyObject *Scheduler_spawn(Scheduler *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "spawn(core, coroutine) takes two arguments");
        return NULL;
    }
    Process *proc = new_process(args[0], args[1], self->order++);
    if (proc == NULL) return NULL;
    if (push_runnable(self, proc) < 0) {
        Py_DECREF(proc);
        return NULL;
    }
    return (PyObject *)proc;
}

/* Scheduler._signalled: a signal changed; its waiters are due for a check. */
static PyObject *Scheduler_signalled(Scheduler *self, PyObject *waiters) {
    if (!PyDict_Check(waiters)) {
        PyErr_SetString(PyExc_TypeError, "a signal's waiters are a dict");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(waiters, &pos, &key, &value)) {
        if (!Py_IS_TYPE(key, &ProcessType)) {
            PyErr_SetString(PyExc_TypeError, "a signal's waiter is not a process of the compiled scheduler");
            return NULL;
        }
        Process *proc = (Process *)key;
        if (proc->dirty) continue;
        proc->dirty = 1;
        if (proc->blocked && proc->has_on && push_due(self, proc) < 0) return NULL; /* (polled: due already) */
    }
    PyDict_Clear(waiters);
    Py_RETURN_NONE;
}

static PyObject *Scheduler_waiting(Scheduler *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    for (Process *proc = self->head; out != NULL && proc != NULL; proc = proc->next) {
        if (proc->waiting == Py_None) continue;
        PyObject *name = PyObject_GetAttr(proc->core, s_name);
        PyObject *pair = name == NULL ? NULL : PyTuple_Pack(2, name, proc->waiting);
        if (pair == NULL || PyList_Append(out, pair) < 0) Py_CLEAR(out);
        Py_XDECREF(pair);
        Py_XDECREF(name);
    }
    return out;
}

static PyObject *Scheduler_blocked_reasons(Scheduler *self, PyObject *Py_UNUSED(ignored)) {
    return blocked_waits(self, 1);
}

static PyObject *Scheduler_label(Scheduler *self, PyObject *core) { return PyObject_GetAttr(core, s_name); }

static PyObject *Scheduler_observe(Scheduler *self, PyObject *observer) {
    if (PyList_Append(self->observers, observer) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Scheduler_release(Scheduler *self, PyObject *Py_UNUSED(ignored)) {
    if (PyList_SetSlice(self->observers, 0, PyList_GET_SIZE(self->observers), NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the type */

static int Scheduler_init(Scheduler *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"on_time", "check_wakeups", NULL};
    PyObject *on_time = Py_None;
    int check_wakeups = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op:Scheduler", names, &on_time, &check_wakeups)) return -1;
    if (self->observers != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Scheduler is initialized once");
        return -1;
    }
    self->observers = PyList_New(0);
    if (self->observers == NULL) return -1;
    Py_INCREF(on_time);
    Py_XSETREF(self->on_time, on_time);
    self->check = check_wakeups;
    return 0;
}

static PyObject *Scheduler_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Scheduler *self = (Scheduler *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(Py_None);
    self->on_time = Py_None;
    return (PyObject *)self;
}

static int ready_to_use(Scheduler *self) {
    if (self->observers != NULL) return 1;
    PyErr_SetString(PyExc_RuntimeError, "Scheduler.__init__ was not called");
    return 0;
}

static int Scheduler_traverse(Scheduler *self, visitproc visit, void *arg) {
    Py_VISIT(self->observers);
    Py_VISIT(self->on_time);
    Py_VISIT(self->stepping);
    for (Py_ssize_t i = 0; i < self->nrun; i++) Py_VISIT(self->runnable[i].proc);
    for (Py_ssize_t i = 0; i < self->ndue; i++) Py_VISIT(self->due[i].proc);
    for (Py_ssize_t i = 0; i < self->nlater; i++) Py_VISIT(self->later[i].proc);
    for (Process *proc = self->head; proc != NULL; proc = proc->next) Py_VISIT(proc);
    return 0;
}

static int Scheduler_clear(Scheduler *self) {
    Py_CLEAR(self->observers);
    Py_CLEAR(self->on_time);
    Py_CLEAR(self->stepping);
    while (self->nrun > 0) {
        Process *proc = self->runnable[--self->nrun].proc;
        Py_DECREF(proc);
    }
    clear_due(self);
    while (self->nlater > 0) {
        Process *proc = self->later[--self->nlater].proc;
        Py_DECREF(proc);
    }
    while (self->head != NULL) {
        Process *proc = self->head;
        Py_INCREF(proc);
        unlink_blocked(self, proc);
        Py_DECREF(proc);
    }
    self->nkept = 0;
    return 0;
}

static void Scheduler_dealloc(Scheduler *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    Scheduler_clear(self);
    PyMem_Free(self->runnable);
    PyMem_Free(self->due);
    PyMem_Free(self->later);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Methods that need __init__ to have run (its observers list) check it first. */
#define GUARDED(fn, kind)                                                                            \
    static PyObject *guarded_##fn(Scheduler *self, kind arg) {                                       \
        return ready_to_use(self) ? Scheduler_##fn(self, arg) : NULL;                                \
    }
GUARDED(run, PyObject *)
GUARDED(run_until, PyObject *)
GUARDED(observe, PyObject *)
GUARDED(release, PyObject *)
GUARDED(signalled, PyObject *)

static PyObject *guarded_spawn(Scheduler *self, PyObject *const *args, Py_ssize_t nargs) {
    return ready_to_use(self) ? Scheduler_spawn(self, args, nargs) : NULL;
}

static PyMethodDef Scheduler_methods[] = {
    {"run", (PyCFunction)guarded_run, METH_NOARGS,
     "Step processes until all finish; DeadlockError if every live one is blocked."},
    {"run_until", (PyCFunction)guarded_run_until, METH_O,
     "Step every process whose clock is before ``horizon``; the clock of the next event, None if none can run."},
    {"spawn", (PyCFunction)(void (*)(void))guarded_spawn, METH_FASTCALL,
     "Start ``coroutine`` on ``core`` at the core's current clock; its Process."},
    {"observe", (PyCFunction)guarded_observe, METH_O, "Have ``observer`` see every busy and stalled stretch."},
    {"release", (PyCFunction)guarded_release, METH_NOARGS, "After the run: drop the observers."},
    {"waiting", (PyCFunction)Scheduler_waiting, METH_NOARGS,
     "The blocked cores and what each waits for, in the order they blocked."},
    {"blocked_reasons", (PyCFunction)Scheduler_blocked_reasons, METH_NOARGS,
     "Each blocked process's name and why it waits, in spawn order."},
    {"label", (PyCFunction)Scheduler_label, METH_O, "A core's name in a deadlock report."},
    {"_signalled", (PyCFunction)guarded_signalled, METH_O, "A signal changed: its waiters are due for a check."},
    {NULL},
};

static PyObject *Scheduler_get_now(Scheduler *self, void *closure) { return PyLong_FromLongLong(self->now); }

static int Scheduler_set_now(Scheduler *self, PyObject *value, void *closure) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "now cannot be deleted");
        return -1;
    }
    cyc now = PyLong_AsLongLong(value);
    if (now == -1 && PyErr_Occurred()) return -1;
    self->now = now;
    return 0;
}

static PyObject *Scheduler_get_idle(Scheduler *self, void *closure) {
    return PyBool_FromLong(self->nrun == 0 && self->nblocked == 0);
}

static PyObject *Scheduler_get_stepping(Scheduler *self, void *closure) {
    return Py_NewRef(self->stepping != NULL ? (PyObject *)self->stepping : Py_None);
}

static PyGetSetDef Scheduler_getset[] = {
    {"now", (getter)Scheduler_get_now, (setter)Scheduler_set_now, "the clock of the latest step", NULL},
    {"idle", (getter)Scheduler_get_idle, NULL, "no process is left, blocked or runnable", NULL},
    {"stepping", (getter)Scheduler_get_stepping, NULL, "the process of the latest step", NULL},
    {NULL},
};

static PyTypeObject SchedulerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pypto_sim_a2a3.engine._scheduler.Scheduler",
    .tp_doc = PyDoc_STR("Runs processes in order of their cores' clocks (compiled; the reference is "
                        "pypto_sim_a2a3.engine.scheduler.Scheduler)."),
    .tp_basicsize = sizeof(Scheduler),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Scheduler_new,
    .tp_init = (initproc)Scheduler_init,
    .tp_dealloc = (destructor)Scheduler_dealloc,
    .tp_traverse = (traverseproc)Scheduler_traverse,
    .tp_clear = (inquiry)Scheduler_clear,
    .tp_methods = Scheduler_methods,
    .tp_getset = Scheduler_getset,
    .tp_weaklistoffset = offsetof(Scheduler, weakreflist),
};

/* ------------------------------------------------------------------ the module */

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scheduler",
    "The compiled scheduler of a2a3sim (the reference is pypto_sim_a2a3.engine.scheduler).", -1, NULL,
};

PyMODINIT_FUNC PyInit__scheduler(void) {
    PyObject *reference = PyImport_ImportModule("pypto_sim_a2a3.engine.scheduler");
    if (reference == NULL) return NULL;
    Advance = PyObject_GetAttrString(reference, "Advance");
    deadlock_error = PyObject_GetAttrString(reference, "deadlock_error");
    Py_DECREF(reference);
    if (Advance == NULL || deadlock_error == NULL) return NULL;
#define INTERN(var, text)                                                                            \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL;
    INTERN(s_clock, "clock")
    INTERN(s_advance, "advance")
    INTERN(s_stall, "stall")
    INTERN(s_unit, "unit")
    INTERN(s_cycles, "cycles")
    INTERN(s_ready, "ready")
    INTERN(s_on, "on")
    INTERN(s_keeps_clock, "keeps_clock")
    INTERN(s_name, "name")
    INTERN(s_blocked, "blocked")
    INTERN(s_waiters, "_waiters")
    INTERN(s_scheduler, "_scheduler")
    INTERN(s_what, "what")
#undef INTERN
    if (PyType_Ready(&ProcessType) < 0 || PyType_Ready(&SchedulerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Process", (PyObject *)&ProcessType) < 0 ||
        PyModule_AddObjectRef(m, "Scheduler", (PyObject *)&SchedulerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
