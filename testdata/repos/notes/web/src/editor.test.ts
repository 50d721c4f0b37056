import { countWords, debounce } from "./editor";

test("countWords counts words separated by whitespace", () => {
  expect(countWords("")).toBe(0);
  expect(countWords(" one  two\nthree ")).toBe(3);
});

test("debounce calls once after the wait", () => {
  jest.useFakeTimers();
  const fn = jest.fn();
  const d = debounce(fn, 100);
  d();
  d();
  jest.advanceTimersByTime(100);
  expect(fn).toHaveBeenCalledTimes(1);
});
