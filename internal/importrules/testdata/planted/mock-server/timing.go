package mockserver

// tick is excepted from points-compare-only-in-score: the server scores nothing.
const tick = 0.005
