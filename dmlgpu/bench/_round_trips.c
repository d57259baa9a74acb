/* The bare round trip in C, for the benchmarks only (``bench.gpu_timers.bare_round_trips`` with
 * ``in_c``): the hot loop's own code (included whole, so that the two are built from one text
 * and agree on every struct) and ``dml_round_trips``, which the library itself never calls.
 * setup.py compiles this into dmlgpu/bench/_round_trips.so beside dmlgpu/runtime/_hot.so. */

#include "../runtime/_hot.c"

/* What bounds a small call: ``n`` round trips straight through wgpu-native with nothing of
 * dmlgpu's between its calls, each a 1-workgroup dispatch of ``pipeline`` with ``group``, a 16-byte copy of
 * ``written`` into ``staging`` where they differ, one submit, the map of ``staging`` polled by
 * this thread alone (without blocking for ``spin_s``, then blocking) and its 16 bytes copied
 * out and unmapped; each one's wall seconds in ``times``. One C call for all of them, so the
 * interpreter's lock is let go throughout: from several threads at once they show what
 * wgpu-native itself does in parallel, with no Python between. 0, or -1 when a map failed. */
DML_EXPORT int dml_round_trips(const DmlFns *f, H device, H queue, H pipeline, H group, H written, H staging,
                               size_t n, double spin_s, double *times) {
    DmlFns alone = *f; /* (no poller: this thread's map wakes nobody) */
    alone.poller = NULL;
    DmlState *s = dml_state_new(0);
    if (!s) return -1;
    unsigned char out[16];
    int failed = 0;
    for (size_t i = 0; i < n && !failed; i++) {
        double start = dml_now();
        H encoder = f->create_encoder(device, f->encoder_descriptor);
        H pass = f->begin_compute_pass(encoder, f->pass_descriptor);
        f->set_pipeline(pass, pipeline);
        f->set_bind_group(pass, 0, group, 0, NULL);
        f->dispatch(pass, 1, 1, 1);
        f->end_pass(pass);
        f->release_pass(pass);
        if (written != staging) f->copy_buffer(encoder, written, 0, staging, 0, 16);
        H buffer = f->finish(encoder, f->buffer_descriptor);
        f->release_encoder(encoder);
        f->submit_for_index(queue, 1, &buffer);
        f->release_command_buffer(buffer);
        dml_map(&alone, staging, 0, 16, s);
        double give_up = dml_now() + spin_s;
        while (dml_state(s) == PENDING) f->poll(device, dml_now() >= give_up, NULL);
        const void *memory = dml_state(s) == LANDED ? f->mapped_range(staging, 0, 16) : NULL;
        if (!memory) {
            failed = 1;
            break;
        }
        memcpy(out, memory, 16);
        f->unmap(staging);
        times[i] = dml_now() - start;
    }
    free(s);
    return failed ? -1 : 0;
}
