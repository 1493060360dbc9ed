// Package deploy holds Bowline's deployment artefacts (CloudFormation in
// cloudformation/, the cloud image's Dockerfile, the edge package in edge/)
// and, as tests, the structural checks of those that have no Go package of
// their own: the Dockerfile lint. See README.md.
package deploy
