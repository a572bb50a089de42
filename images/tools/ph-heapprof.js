// ph-heapprof.js - the heap mode's preload for node (NODE_OPTIONS
// `--require`, profiles/heap.yaml): V8's own sampling heap profiler
// (the inspector's HeapProfiler.startSampling, in process, at
// PH_HEAPPROF_INTERVAL bytes on average), its profile of what is live
// written into PH_HEAPPROF_DIR as the process exits (Heap-<pid>-<ms>.heapprofile,
// the format of node's --heap-prof, which NODE_OPTIONS refuses before
// node 20).  A SIGTERM the service does not handle itself: the profile
// written, then the signal's default action, as without us.  Any
// failure leaves the service as it is.
'use strict';
(function phHeapprof() {
    const dir = process.env.PH_HEAPPROF_DIR;
    let inspector, fs, wt;

    if (!dir)
        return;
    try {
        inspector = require('inspector');
        fs = require('fs');
        wt = require('worker_threads');
    } catch (e) {
        return;
    }
    if (!wt.isMainThread)
        return;
    const interval = Number(process.env.PH_HEAPPROF_INTERVAL) || 524288;
    const session = new inspector.Session();
    let written = false;

    try {
        session.connect();
        session.post('HeapProfiler.startSampling', { samplingInterval: interval });
    } catch (e) {
        return;
    }
    function write() {
        if (written)
            return;
        written = true;
        // the in-process session answers before post returns
        session.post('HeapProfiler.stopSampling', (err, r) => {
            if (err || !r || !r.profile)
                return;
            const name = `${dir}/Heap-${process.pid}-${Date.now()}.heapprofile`;
            try {
                fs.writeFileSync(`${name}.tmp`, JSON.stringify(r.profile));
                fs.renameSync(`${name}.tmp`, name);
            } catch (e) {
                // the run says the profile is missing
            }
        });
    }
    function onTerm(sig) {
        if (process.listenerCount(sig) > 1)
            return; // the service's own handler ends it: 'exit' writes
        write();
        process.removeListener(sig, onTerm);
        process.kill(process.pid, sig);
    }
    process.on('exit', write);
    process.on('SIGTERM', onTerm);
})();
