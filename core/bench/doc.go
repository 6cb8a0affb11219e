// Package bench holds the statistics of test runs and certification.
//
// Score turns the scored data of one run — which answer each judge preferred
// for each question, with the question's bucket, template and answer
// lengths — into a Report: the question-weighted win rate W of the mode over
// its baseline, its question-clustered standard error and 95% interval, the
// figures that show how far the run can be trusted (intra-question
// correlation, design effect, judge agreement, position consistency, the
// length-controlled W, …), the gates and the verdict. The method is
// docs/certify.md.
//
// Everything here is pure: no I/O, no clock, no randomness. The same Run and
// Config give the same Report. The simulator that checks the method's
// calibration is the subpackage benchsim.
package bench
