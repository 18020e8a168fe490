// The structuredContent of show_playbook: the contract between the tool and the playbook view.
// Types only (the playbook's own shapes are generated from the spec's Playbook schema), so the
// view (ui/playbook) can use them as they are.
import type { components } from '../../generated/openapi.js'

export type Playbook = components['schemas']['Playbook']
export type Phase = Playbook['phases'][number]
export type PlaybookStyle = Playbook['styles'][number]

export interface PlaybookProject {
  id: string
  title: string
  designer: string
  city: string
  country: string
  year: number
  area_sqm: number
  image: { url: string; alt: string } | null
  page_url: string
}

export interface PlaybookView {
  studio: { name: string; tagline: string }
  phases: Phase[]
  styles: (PlaybookStyle & { projects: PlaybookProject[] })[]
  filter: { style: string | null; location: string | null }
}
