/**
 * The two states every view shows before it has a result: waiting for the host (a skeleton of
 * the content to come) and a problem it cannot get past.
 */
import { append, clear, h, icon } from './dom.ts'

/** Skeleton lines: a width (and optionally a height) each, e.g. `width: 72%`. */
export function renderPending(root: HTMLElement, title: string, message: string, lines: string[]): void {
  root.setAttribute('aria-busy', 'true')
  clear(root)
  append(root, [
    h('p', { class: 'eyebrow' }, title),
    h('p', { class: 'pending display' }, message),
    h('div', { class: 'skeleton', 'aria-hidden': 'true' }, ...lines.map((style) => h('span', { style }))),
  ])
}

export function renderProblem(root: HTMLElement, title: string, message: string): void {
  root.setAttribute('aria-busy', 'false')
  clear(root)
  append(root, [
    h('p', { class: 'eyebrow' }, title),
    h('div', { class: 'notice notice-error', role: 'alert' }, icon('alert'), h('span', {}, message)),
  ])
}
