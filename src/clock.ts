/** Time as the service sees it; tests pass a clock they can move instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until told to move. */
export class ManualClock implements Clock {
  private current: number;
  private offsetMs: number;
  constructor(start: Date | string = '2026-01-01T00:00:00Z') {
    this.current = new Date(start).getTime();
    this.offsetMs = this.current - Date.now();
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(milliseconds: number): void {
    this.current += milliseconds;
    this.offsetMs += milliseconds;
  }
  advanceSeconds(seconds: number): void {
    this.advance(seconds * 1000);
  }
  /**
   * How far this clock was from the wall clock when it was made, moved by exactly each advance():
   * the database's "now" in tests is its now() plus this (database-clock.ts). Fixed rather than
   * measured per statement, so that the database's time never steps back between two statements
   * (a row written due "now" and claimed in the same millisecond was not yet due, now and then).
   */
  get wallClockOffsetMs(): number {
    return this.offsetMs;
  }
}
