// @roster/shared/interns: The interns' domain: who may see and change one, creating, reading and listing them, their lifecycle.
export * from './access.js'
export * from './view.js'
export * from './create-intern.js'
export * from './get-intern.js'
export * from './create-batcher.js'
export * from './lifecycle.js'
export * from './intern-reader.js'
export * from './icons.js'
