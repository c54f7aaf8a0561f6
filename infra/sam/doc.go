// Package sam holds the tests of the deployment: template.yaml is parsed with goformation and
// checked against the code it deploys (each route reaches the function that serves it, every
// configuration variable the functions need is set, every IAM statement names one resource).
// It has no code of its own; the template is the thing under test.
package sam
