// Package stepwire is the form an agent's steps take when they cross a
// process boundary: a durable backend (the Temporal one, a module of its
// own) keeps an agent's conversation and budgets in a workflow and has a
// worker run each step (manager.StepAgent) on a manager. Both sides
// import this package: the inputs and outputs of each step in a JSON form
// that reads back what it wrote (langchaingo's own JSON form of a tool
// call does not), the Stepper that runs them, and the error classes they
// carry (sdk/fault), so a worker retries what may pass and fails at once
// what will not.
package stepwire
