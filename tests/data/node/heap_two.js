// heap_two.js: the heap mode's Node service (tests/68-heap.bats).  Keeps
// arrays of doubles on V8's heap from two functions, 3 to 1 (24 and
// 8 MiB), churns more that it drops, says it is ready and serves until
// SIGTERM, on which it exits (as a server closing its socket does; with
// `N bare` it has no handler: SIGTERM's default action ends it).
'use strict';
const kept = [];

function keepThree(n) {
    for (let i = 0; i < 3 * n; i++) kept.push(new Array(1024).fill(i + 0.5));
}

function keepOne(n) {
    for (let i = 0; i < n; i++) kept.push(new Array(1024).fill(i + 0.25));
}

function churn(n) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += new Array(1024).fill(i + 0.125)[7];
    return sum;
}

const n = Number(process.argv[2] || 1024);
keepThree(n);
keepOne(n);
churn(8 * n);
if (process.argv[3] !== 'bare')
    process.on('SIGTERM', () => process.exit(0));
console.log('heap_two: ready');
setInterval(() => {}, 1000);
